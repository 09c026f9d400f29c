# Hand-written: Document.chunk_count filled, then kept by statement-level triggers on the chunk table, as the
# BM25 statistics are (0007): every path that adds or removes paragraph rows — a publish's COPY, a re-index's
# staging and cutover, a cascade delete, a test's bulk_create — counts them in its own statement, and none of
# them has to remember to. Transition tables give each statement's rows at once: one UPDATE per statement and
# document, never one per row (a publish of 50,000 paragraphs updates its document once).
#
# A guard on the document keeps the column the triggers' own: a new document starts at 0 and an UPDATE of the
# document by the application (a save() of an instance read before its paragraphs changed) keeps the count it
# has. Only an UPDATE made from inside a trigger (pg_trigger_depth() 2: the chunk table's) changes it.
#
# Not counted by a trigger: a paragraph moving to another document (no statement changes chunk.document_id;
# an UPDATE trigger would join every relabel's and cutover's 50,000 old and new rows to look for one).
from django.db import migrations

COUNT = """
CREATE OR REPLACE FUNCTION kb_chunk_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collections_app_document d SET chunk_count = d.chunk_count + g.n
        FROM (SELECT document_id, count(*) AS n FROM new_rows GROUP BY document_id) g
        WHERE d.id = g.document_id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION kb_chunk_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collections_app_document d SET chunk_count = d.chunk_count - g.n
        FROM (SELECT document_id, count(*) AS n FROM old_rows GROUP BY document_id) g
        WHERE d.id = g.document_id;
    RETURN NULL;
END $$;

CREATE TRIGGER kb_chunk_count_insert AFTER INSERT ON collections_app_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kb_chunk_count_insert();
CREATE TRIGGER kb_chunk_count_delete AFTER DELETE ON collections_app_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kb_chunk_count_delete();
"""

GUARD = """
CREATE OR REPLACE FUNCTION kb_chunk_count_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() < 2 THEN  -- the application's own statement, not the chunk table's triggers
        NEW.chunk_count := CASE WHEN TG_OP = 'INSERT' THEN 0 ELSE OLD.chunk_count END;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER kb_chunk_count_guard BEFORE INSERT OR UPDATE ON collections_app_document
    FOR EACH ROW EXECUTE FUNCTION kb_chunk_count_guard();
"""

# The documents held before: counted once. The chunk table is locked against writers first, so no paragraph
# is written between this count and the triggers that count the next ones (both commit together).
BACKFILL = """
LOCK TABLE collections_app_chunk IN SHARE ROW EXCLUSIVE MODE;
UPDATE collections_app_document d SET chunk_count = c.n
    FROM (SELECT document_id, count(*) AS n FROM collections_app_chunk GROUP BY document_id) c
    WHERE d.id = c.document_id;
"""

REVERSE = """
DROP TRIGGER IF EXISTS kb_chunk_count_guard ON collections_app_document;
DROP TRIGGER IF EXISTS kb_chunk_count_insert ON collections_app_chunk;
DROP TRIGGER IF EXISTS kb_chunk_count_delete ON collections_app_chunk;
DROP FUNCTION IF EXISTS kb_chunk_count_guard();
DROP FUNCTION IF EXISTS kb_chunk_count_insert();
DROP FUNCTION IF EXISTS kb_chunk_count_delete();
UPDATE collections_app_document SET chunk_count = 0 WHERE chunk_count <> 0;
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0018_document_chunk_count")]

    operations = [migrations.RunSQL(sql=BACKFILL + COUNT + GUARD, reverse_sql=REVERSE)]
