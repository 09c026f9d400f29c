"""What a running export or import is doing (checking, embedding, writing, indexing), shown with its progress."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0030_retired_paragraph_when_pending_edits")]

    operations = [
        migrations.AddField(
            model_name="collectionfile",
            name="phase",
            field=models.CharField(
                blank=True,
                choices=[
                    ("check", "checking the file"),
                    ("embed", "embedding again"),
                    ("write", "writing paragraphs"),
                    ("index", "indexing keywords"),
                ],
                default="",
                max_length=10,
            ),
        ),
    ]
