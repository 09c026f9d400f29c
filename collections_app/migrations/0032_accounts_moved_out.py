"""Tenants, memberships, agents and API keys leave collections_app's state (accounts 0001 holds them now, on
the same tables); the content's tenant references name accounts.Tenant. Nothing changes in the database."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_moved_from_collections_app"),
        ("collections_app", "0031_collectionfile_phase"),
        ("retrieval", "0008_accounts_moved_out"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="apikey",
                    name="agent",
                ),
                migrations.RemoveField(
                    model_name="apikey",
                    name="readers",
                ),
                migrations.RemoveField(
                    model_name="apikey",
                    name="tenant",
                ),
                migrations.RemoveField(
                    model_name="membership",
                    name="tenant",
                ),
                migrations.RemoveField(
                    model_name="membership",
                    name="user",
                ),
                migrations.AlterField(
                    model_name="readerlabel",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="build",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="collection",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="chunk",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="documentversion",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="paragraphedit",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="document",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="collectionfile",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.DeleteModel(
                    name="Agent",
                ),
                migrations.DeleteModel(
                    name="ApiKey",
                ),
                migrations.DeleteModel(
                    name="Membership",
                ),
                migrations.DeleteModel(
                    name="Tenant",
                ),
            ],
        ),
    ]
