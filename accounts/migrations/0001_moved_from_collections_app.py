"""Tenants, memberships, agents and API keys move here from collections_app in Django's state only: each keeps
its table (db_table), so no row moves and no constraint is rebuilt. Their content types move with them, so the
permissions given on them and the admin's history of their rows stay attached (docs/DECISIONS.md, "The accounts
app")."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ["tenant", "membership", "agent", "apikey"]


def _relabel(apps, schema_editor, old: str, new: str) -> None:
    # The same row changes label (not a new one made beside it): permissions given on these models and admin log
    # entries point at the content type by id, so they stay attached.
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not content_type.objects.filter(app_label=new, model=model).exists():
            content_type.objects.filter(app_label=old, model=model).update(app_label=new)


def content_types_to_accounts(apps, schema_editor) -> None:
    _relabel(apps, schema_editor, "collections_app", "accounts")


def content_types_to_collections_app(apps, schema_editor) -> None:
    _relabel(apps, schema_editor, "accounts", "collections_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("collections_app", "0031_collectionfile_phase"),
        ("retrieval", "0007_citation_checks"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Tenant",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("name", models.CharField(max_length=100, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "collections_app_tenant",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="Agent",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("name", models.CharField(max_length=200)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "collections",
                            models.ManyToManyField(
                                blank=True,
                                db_table="collections_app_agent_collections",
                                related_name="agents",
                                to="collections_app.collection",
                            ),
                        ),
                        (
                            "tenant",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                        ),
                    ],
                    options={
                        "db_table": "collections_app_agent",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("name", models.CharField(blank=True, default="", max_length=200)),
                        (
                            "role",
                            models.CharField(
                                choices=[("viewer", "viewer"), ("editor", "editor"), ("admin", "admin")],
                                default="viewer",
                                max_length=10,
                            ),
                        ),
                        ("prefix", models.CharField(db_index=True, max_length=16)),
                        ("hashed_key", models.CharField(max_length=64, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked", models.BooleanField(default=False)),
                        (
                            "any_reader",
                            models.BooleanField(
                                default=False,
                                help_text="May act for every reader of its tenant, present and future (the readers below then do not matter).",
                            ),
                        ),
                        (
                            "agent",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="keys",
                                to="accounts.agent",
                            ),
                        ),
                        (
                            "readers",
                            models.ManyToManyField(
                                blank=True,
                                db_table="collections_app_apikey_readers",
                                help_text="The registered readers this key may name in a search, a corpus map or a citation check.",
                                related_name="delegated_keys",
                                to="retrieval.reader",
                            ),
                        ),
                        (
                            "tenant",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                        ),
                    ],
                    options={
                        "verbose_name": "API key",
                        "db_table": "collections_app_apikey",
                        "ordering": ["-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="Membership",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "role",
                            models.CharField(
                                choices=[("viewer", "viewer"), ("editor", "editor"), ("admin", "admin")],
                                default="viewer",
                                max_length=10,
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="memberships",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "tenant",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="memberships",
                                to="accounts.tenant",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "collections_app_membership",
                        "constraints": [
                            models.UniqueConstraint(fields=("user", "tenant"), name="membership_one_per_user_tenant")
                        ],
                    },
                ),
                migrations.AddConstraint(
                    model_name="agent",
                    constraint=models.UniqueConstraint(fields=("tenant", "name"), name="agent_name_unique_per_tenant"),
                ),
            ],
        ),
        migrations.RunPython(content_types_to_accounts, content_types_to_collections_app),
    ]
