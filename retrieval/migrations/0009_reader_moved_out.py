"""Readers now live in accounts (accounts 0002): the references to them name it, and retrieval's state forgets the
model. State only: the table and its constraints stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


def _reader(related_name: str) -> models.ForeignKey:
    return models.ForeignKey(
        blank=True,
        null=True,
        on_delete=django.db.models.deletion.SET_NULL,
        related_name=related_name,
        to="accounts.reader",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_reader_moved_in"),
        ("retrieval", "0008_accounts_moved_out"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="searchevent", name="reader", field=_reader("searches")),
                migrations.AlterField(model_name="evaluation", name="reader", field=_reader("evaluations")),
                migrations.AlterField(model_name="measure", name="reader", field=_reader("measures")),
                migrations.DeleteModel(name="Reader"),
            ],
            database_operations=[],
        ),
    ]
