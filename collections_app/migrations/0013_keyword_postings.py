# Hand-written: a postings table for BM25 (collection, lexeme, paragraph → tf and the paragraph's length),
# kept by the same statement-level triggers as KeywordStats/KeywordTerm (0007), in the same transaction as
# every build, rechunk, cutover and delete. The keyword stage reads only the (question word, paragraph)
# pairs it needs through the primary key, whose INCLUDE columns make those reads index-only; before, it
# found candidates with a GIN @@ and unnested every candidate's whole tsvector.
from django.db import migrations, models

TABLE = """
CREATE TABLE collections_app_keywordposting (
    collection_id uuid NOT NULL,
    lexeme text NOT NULL,
    chunk_id uuid NOT NULL,
    tf smallint NOT NULL,
    length integer NOT NULL,
    CONSTRAINT keyword_posting_pk PRIMARY KEY (collection_id, lexeme, chunk_id) INCLUDE (tf, length)
);
ALTER TABLE collections_app_keywordposting SET (autovacuum_vacuum_insert_scale_factor = 0.05);
"""

# The rows of one statement's transition table, one per (paragraph, word): collection, lexeme, paragraph,
# tf (the word's positions, as kb_tsvector_length counts them) and the paragraph's length.
_POSTINGS = """
    SELECT r.collection_id, u.lexeme, r.id AS chunk_id,
           coalesce(array_length(u.positions, 1), 1)::smallint AS tf, r.length
    FROM (SELECT s.collection_id, s.id, s.search_vector, kb_tsvector_length(s.search_vector)::integer AS length
          FROM {source} s WHERE s.search_vector IS NOT NULL OFFSET 0) r,
         unnest(r.search_vector) u
"""


def _add(source: str) -> str:
    return f"""
    PERFORM kb_keyword_stats_lock(ARRAY(SELECT collection_id FROM {source} WHERE search_vector IS NOT NULL));
    INSERT INTO collections_app_keywordstats AS s (collection_id, paragraphs, total_length)
        SELECT collection_id, count(*), sum(kb_tsvector_length(search_vector))
        FROM {source} WHERE search_vector IS NOT NULL GROUP BY collection_id
    ON CONFLICT (collection_id) DO UPDATE
        SET paragraphs = s.paragraphs + EXCLUDED.paragraphs, total_length = s.total_length + EXCLUDED.total_length;
    INSERT INTO collections_app_keywordterm AS t (collection_id, lexeme, paragraphs)
        SELECT r.collection_id, u.lexeme, count(*)
        FROM {source} r, unnest(r.search_vector) u WHERE r.search_vector IS NOT NULL
        GROUP BY r.collection_id, u.lexeme ORDER BY r.collection_id, u.lexeme
    ON CONFLICT (collection_id, lexeme) DO UPDATE SET paragraphs = t.paragraphs + EXCLUDED.paragraphs;
    INSERT INTO collections_app_keywordposting (collection_id, lexeme, chunk_id, tf, length)
        {_POSTINGS.format(source=source)};
"""


def _subtract(source: str) -> str:
    return f"""
    PERFORM kb_keyword_stats_lock(ARRAY(SELECT collection_id FROM {source} WHERE search_vector IS NOT NULL));
    UPDATE collections_app_keywordstats s
        SET paragraphs = s.paragraphs - g.n, total_length = s.total_length - g.len
        FROM (SELECT collection_id, count(*) AS n, sum(kb_tsvector_length(search_vector)) AS len
              FROM {source} WHERE search_vector IS NOT NULL GROUP BY collection_id) g
        WHERE s.collection_id = g.collection_id;
    WITH g AS (
        SELECT r.collection_id, u.lexeme, count(*) AS n
        FROM {source} r, unnest(r.search_vector) u WHERE r.search_vector IS NOT NULL
        GROUP BY r.collection_id, u.lexeme
    ), updated AS (
        UPDATE collections_app_keywordterm t SET paragraphs = t.paragraphs - g.n
        FROM g WHERE t.collection_id = g.collection_id AND t.lexeme = g.lexeme
        RETURNING t.id, t.paragraphs
    )
    DELETE FROM collections_app_keywordterm WHERE id IN (SELECT id FROM updated WHERE paragraphs <= 0);
    DELETE FROM collections_app_keywordposting p
        USING (SELECT r.collection_id, u.lexeme, r.id FROM {source} r, unnest(r.search_vector) u
               WHERE r.search_vector IS NOT NULL) g
        WHERE p.collection_id = g.collection_id AND p.lexeme = g.lexeme AND p.chunk_id = g.id;
"""


CHANGED_OLD = (
    "(SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector)"
)
CHANGED_NEW = (
    "(SELECT n.* FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.search_vector IS DISTINCT FROM n.search_vector)"
)

# The trigger functions of 0007, replaced in place: the triggers themselves stay.
FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION kb_keyword_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_add("new_rows")} RETURN NULL; END $$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_subtract("old_rows")} RETURN NULL; END $$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_subtract(CHANGED_OLD)} {_add(CHANGED_NEW)} RETURN NULL; END $$;
"""

# Paragraphs indexed before this migration.
BACKFILL = f"""
LOCK TABLE collections_app_chunk IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO collections_app_keywordposting (collection_id, lexeme, chunk_id, tf, length)
    {_POSTINGS.format(source="collections_app_chunk")};
ANALYZE collections_app_keywordposting;
"""


def _reverse() -> str:
    # Rebuilt from this module's text with the postings statements taken out.
    from importlib import import_module

    source = import_module("collections_app.migrations.0007_keyword_stats_triggers")
    return source.TRIGGERS.split("CREATE TRIGGER", 1)[0] + "DROP TABLE IF EXISTS collections_app_keywordposting;"


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0012_document_labels")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="KeywordPosting",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "collection_id",
                                "lexeme",
                                "chunk_id",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("collection_id", models.UUIDField()),
                        ("lexeme", models.TextField()),
                        ("chunk_id", models.UUIDField()),
                        ("tf", models.SmallIntegerField()),
                        ("length", models.IntegerField(help_text="Word positions of the paragraph (its BM25 length).")),
                    ],
                ),
            ],
            database_operations=[migrations.RunSQL(sql=TABLE + FUNCTIONS + BACKFILL, reverse_sql=_reverse())],
        ),
    ]
