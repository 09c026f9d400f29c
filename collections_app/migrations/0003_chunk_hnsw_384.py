# Hand-written: an HNSW index needs a fixed width, and Chunk.embedding has none
# so that models of several widths can share the table. Each width gets a
# partial expression index; searches cast to that width and filter on it.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0002_initial")]

    operations = [
        migrations.RunSQL(
            sql=(
                "CREATE INDEX chunk_embedding_hnsw_384 ON collections_app_chunk "
                "USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dims = 384"
            ),
            reverse_sql="DROP INDEX IF EXISTS chunk_embedding_hnsw_384",
        ),
    ]
