"""Readers move here from retrieval: who a search is made for is known before what it asks about, and an API key's
reader delegation then names a model of its own app. State only: the table keeps its name (retrieval_reader), so no
row moves and no constraint is rebuilt; the content type is relabelled so permissions and admin history stay."""

import uuid

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models


def _relabel(apps, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    if not content_type.objects.filter(app_label=new, model="reader").exists():
        content_type.objects.filter(app_label=old, model="reader").update(app_label=new)


def content_type_to_accounts(apps, schema_editor) -> None:
    _relabel(apps, "retrieval", "accounts")


def content_type_to_retrieval(apps, schema_editor) -> None:
    _relabel(apps, "accounts", "retrieval")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_moved_from_collections_app"),
        ("retrieval", "0008_accounts_moved_out"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Reader",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        (
                            "name",
                            models.CharField(
                                help_text="How searches name this reader, e.g. ada@example.com.", max_length=200
                            ),
                        ),
                        (
                            "labels",
                            django.contrib.postgres.fields.ArrayField(
                                base_field=models.CharField(max_length=100),
                                blank=True,
                                default=list,
                                help_text="Paragraphs of per-reader collections carrying one of these labels are readable to this reader.",
                                size=None,
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "tenant",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                        ),
                    ],
                    options={
                        "db_table": "retrieval_reader",
                        "ordering": ["name"],
                        "constraints": [
                            models.UniqueConstraint(fields=("tenant", "name"), name="reader_name_unique_per_tenant")
                        ],
                    },
                ),
                migrations.AlterField(
                    model_name="apikey",
                    name="readers",
                    field=models.ManyToManyField(
                        blank=True,
                        db_table="collections_app_apikey_readers",
                        help_text="The registered readers this key may name in a search, a corpus map or a citation check.",
                        related_name="delegated_keys",
                        to="accounts.reader",
                    ),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_to_accounts, content_type_to_retrieval),
    ]
