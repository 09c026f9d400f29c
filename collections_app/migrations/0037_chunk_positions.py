# Hand-written (issue 42, ordinals that don't move rows): a paragraph's place in its document moves from the chunk
# row to a narrow side table, `collections_app_chunkposition` (chunk id, document, generation, ordinal), with the
# deferrable unique (document, generation, ordinal) constraint. A split or merge near the start of a long document
# moved every later chunk row, each a new tuple with an entry in every index, the HNSW graph's included (765 ms for
# 2,000 paragraphs); it now moves narrow rows with two index entries each (docs/DECISIONS.md, "Ordinals that don't
# move rows"). The chunk's own `ordinal` column goes in the same migration, so no read can use a stale number.
#
# The foreign keys are the database's, ON DELETE CASCADE: every delete of chunk rows (raw SQL in the tenant and
# collection removal, the document delete, the ORM) takes their positions with them without naming the table.
# Deferred like Django's own, so a writer may insert the position before or after its row in one transaction.

import django.db.models.constraints
import django.db.models.deletion
from django.db import migrations, models

FOREIGN_KEYS = """
ALTER TABLE collections_app_chunkposition
    ADD CONSTRAINT chunk_position_chunk_fk FOREIGN KEY (chunk_id) REFERENCES collections_app_chunk (id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    ADD CONSTRAINT chunk_position_document_fk FOREIGN KEY (document_id) REFERENCES collections_app_document (id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
"""
NO_FOREIGN_KEYS = """
ALTER TABLE collections_app_chunkposition
    DROP CONSTRAINT chunk_position_chunk_fk, DROP CONSTRAINT chunk_position_document_fk;
"""

# Every existing row's place, as its column holds it. The reverse puts it back into the column.
FILL = """
INSERT INTO collections_app_chunkposition (chunk_id, document_id, generation, ordinal)
SELECT id, document_id, generation, ordinal FROM collections_app_chunk;
"""
UNFILL = """
ALTER TABLE collections_app_chunk DISABLE TRIGGER USER;  -- a place changes no keyword: the statistics stay
UPDATE collections_app_chunk c SET ordinal = p.ordinal FROM collections_app_chunkposition p WHERE p.chunk_id = c.id;
ALTER TABLE collections_app_chunk ENABLE TRIGGER USER;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("collections_app", "0036_collection_deleting"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChunkPosition",
            fields=[
                ("chunk", models.OneToOneField(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name="position", serialize=False, to="collections_app.chunk")),
                ("generation", models.PositiveIntegerField()),
                ("ordinal", models.PositiveIntegerField()),
                ("document", models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to="collections_app.document")),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(deferrable=django.db.models.constraints.Deferrable["IMMEDIATE"], fields=("document", "generation", "ordinal"), name="chunk_position_unique_per_document_generation"),
                ],
            },
        ),
        migrations.RunSQL(FOREIGN_KEYS, NO_FOREIGN_KEYS),
        migrations.AlterModelOptions(
            name="chunk",
            options={"ordering": ["document", "position__ordinal"]},
        ),
        migrations.RemoveConstraint(
            model_name="chunk",
            name="chunk_ordinal_unique_per_document_generation",
        ),
        # Nullable first, so the reverse can add the column back empty and fill it before it is NOT NULL again.
        migrations.AlterField(
            model_name="chunk",
            name="ordinal",
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.RunSQL(FILL, UNFILL),
        migrations.RemoveField(
            model_name="chunk",
            name="ordinal",
        ),
    ]
