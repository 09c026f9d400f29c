"""The references to tenants, agents and API keys now name the accounts app (in state only: the columns and
their constraints already point at the same tables)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_moved_from_collections_app"),
        ("retrieval", "0007_citation_checks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="citationcheck",
                    name="agent",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="citation_checks",
                        to="accounts.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="citationcheck",
                    name="api_key",
                    field=models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="citation_checks",
                        to="accounts.apikey",
                    ),
                ),
                migrations.AlterField(
                    model_name="citationcheck",
                    name="on_behalf_of",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="citation_checks_on_behalf",
                        to="accounts.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="citationcheck",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="collectionjudge",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="evaluation",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="goldenquestion",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="measure",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="modelcall",
                    name="agent",
                    field=models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="model_calls",
                        to="accounts.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="modelcall",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="reader",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
                migrations.AlterField(
                    model_name="searchevent",
                    name="agent",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="search_events",
                        to="accounts.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="searchevent",
                    name="api_key",
                    field=models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="search_events",
                        to="accounts.apikey",
                    ),
                ),
                migrations.AlterField(
                    model_name="searchevent",
                    name="on_behalf_of",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="searches_on_behalf",
                        to="accounts.agent",
                    ),
                ),
                migrations.AlterField(
                    model_name="searchevent",
                    name="tenant",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="accounts.tenant"),
                ),
            ],
        ),
    ]
