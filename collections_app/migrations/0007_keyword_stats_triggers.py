# Hand-written: BM25 statistics (KeywordStats, KeywordTerm) kept by statement-level triggers on the chunk
# table, so every path that changes paragraphs — a build, a rechunk, a relabel, a cascade delete — updates
# them in its own transaction, and none of those paths has to remember to. Transition tables give each
# statement's rows at once (one upsert per statement, not per row). A per-collection advisory lock,
# taken in collection order, serialises concurrent builds of one collection so their upserts never deadlock.
from django.db import migrations

LENGTH = """
CREATE OR REPLACE FUNCTION kb_tsvector_length(vector tsvector) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest(vector) u
$$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_lock(collection_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE cid uuid;
BEGIN
    FOR cid IN SELECT DISTINCT c FROM unnest(collection_ids) c ORDER BY c LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('kb_keyword_stats:' || cid::text, 0));
    END LOOP;
END $$;
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
"""


CHANGED_OLD = (
    "(SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.search_vector IS DISTINCT FROM n.search_vector)"
)
CHANGED_NEW = (
    "(SELECT n.* FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.search_vector IS DISTINCT FROM n.search_vector)"
)

TRIGGERS = f"""
CREATE OR REPLACE FUNCTION kb_keyword_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_add("new_rows")} RETURN NULL; END $$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_subtract("old_rows")} RETURN NULL; END $$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_subtract(CHANGED_OLD)} {_add(CHANGED_NEW)} RETURN NULL; END $$;

CREATE TRIGGER kb_keyword_stats_insert AFTER INSERT ON collections_app_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kb_keyword_stats_insert();
CREATE TRIGGER kb_keyword_stats_delete AFTER DELETE ON collections_app_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kb_keyword_stats_delete();
CREATE TRIGGER kb_keyword_stats_update AFTER UPDATE ON collections_app_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kb_keyword_stats_update();
"""

# Paragraphs indexed before the triggers existed.
BACKFILL = """
INSERT INTO collections_app_keywordstats (collection_id, paragraphs, total_length)
    SELECT collection_id, count(*), sum(kb_tsvector_length(search_vector))
    FROM collections_app_chunk WHERE search_vector IS NOT NULL GROUP BY collection_id;
INSERT INTO collections_app_keywordterm (collection_id, lexeme, paragraphs)
    SELECT c.collection_id, u.lexeme, count(*)
    FROM collections_app_chunk c, unnest(c.search_vector) u WHERE c.search_vector IS NOT NULL
    GROUP BY c.collection_id, u.lexeme;
"""

REVERSE = """
DROP TRIGGER IF EXISTS kb_keyword_stats_insert ON collections_app_chunk;
DROP TRIGGER IF EXISTS kb_keyword_stats_delete ON collections_app_chunk;
DROP TRIGGER IF EXISTS kb_keyword_stats_update ON collections_app_chunk;
DROP FUNCTION IF EXISTS kb_keyword_stats_insert();
DROP FUNCTION IF EXISTS kb_keyword_stats_delete();
DROP FUNCTION IF EXISTS kb_keyword_stats_update();
DROP FUNCTION IF EXISTS kb_keyword_stats_lock(uuid[]);
DROP FUNCTION IF EXISTS kb_tsvector_length(tsvector);
DELETE FROM collections_app_keywordterm;
DELETE FROM collections_app_keywordstats;
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0006_keyword_stats")]

    operations = [migrations.RunSQL(sql=LENGTH + TRIGGERS + BACKFILL, reverse_sql=REVERSE)]
