# New paragraphs get time-ordered ids (collections_app.models.paragraph_id): a Python default, so no SQL runs;
# existing rows keep theirs, and the next build of a document writes its paragraphs in id order (issue 22).

from django.db import migrations, models

import collections_app.models


class Migration(migrations.Migration):

    dependencies = [
        ('collections_app', '0028_keyword_delete_skips_dropped_collections'),
    ]

    operations = [
        migrations.AlterField(
            model_name='chunk',
            name='id',
            field=models.UUIDField(default=collections_app.models.paragraph_id, editable=False, primary_key=True, serialize=False),
        ),
    ]
