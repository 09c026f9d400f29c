"""Reader labels move from `ingest_options["labels"]` to a field of their own (changing them no longer re-parses)."""

import django.contrib.postgres.fields
from django.db import migrations, models


def labels_to_field(apps, schema_editor):  # type: ignore[no-untyped-def]
    Document = apps.get_model("collections_app", "Document")
    for document in Document.objects.filter(ingest_options__has_key="labels").only("pk", "ingest_options"):
        options = dict(document.ingest_options)
        labels = options.pop("labels", None) or []
        Document.objects.filter(pk=document.pk).update(labels=list(labels), ingest_options=options)


def labels_to_options(apps, schema_editor):  # type: ignore[no-untyped-def]
    Document = apps.get_model("collections_app", "Document")
    for document in Document.objects.exclude(labels=[]).only("pk", "ingest_options", "labels"):
        options = {**document.ingest_options, "labels": list(document.labels)}
        Document.objects.filter(pk=document.pk).update(ingest_options=options)


class Migration(migrations.Migration):
    dependencies = [
        ("collections_app", "0011_collection_active_alias"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="labels",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=100),
                blank=True,
                default=list,
                help_text="Per-reader collections: a reader holding one of these labels may read the document's "
                "paragraphs.",
                size=None,
            ),
        ),
        migrations.RunPython(labels_to_field, labels_to_options),
    ]
