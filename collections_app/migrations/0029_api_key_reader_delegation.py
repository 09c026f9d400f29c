"""Reader delegation: which registered readers a key may act for (issue 39, item 12).

New keys act for no reader until an admin gives them some. Keys made before delegation existed are moved to
"any reader" here, on purpose: their agents name readers today, and turning that into a 403 on upgrade would
break every such deployment at once. Admins narrow them on the key's page (README, "Reader delegation").
"""

from django.db import migrations, models


def existing_keys_act_for_any_reader(apps, schema_editor):
    apps.get_model("collections_app", "ApiKey").objects.update(any_reader=True)


class Migration(migrations.Migration):
    dependencies = [
        ("collections_app", "0028_keyword_delete_skips_dropped_collections"),
        ("retrieval", "0007_citation_checks"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="any_reader",
            field=models.BooleanField(
                default=False,
                help_text="May act for every reader of its tenant, present and future (the readers below then do "
                "not matter).",
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="readers",
            field=models.ManyToManyField(
                blank=True,
                help_text="The registered readers this key may name in a search, a corpus map or a citation check.",
                related_name="delegated_keys",
                to="retrieval.reader",
            ),
        ),
        # Reversing drops both fields; nothing to undo in the rows.
        migrations.RunPython(existing_keys_act_for_any_reader, migrations.RunPython.noop),
    ]
