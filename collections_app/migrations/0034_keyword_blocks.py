# Hand-written: the keyword index stored the way search engines store it. One row per (collection, word, block of up
# to BLOCK paragraphs) instead of one per (collection, word, paragraph): the paragraphs as offsets from the block's
# first paragraph number (int4), each with its term frequency and BM25 length packed into one int4, and the block's
# maxima (the highest tf, the shortest length). 10,095,343 postings rows for 100,001 paragraphs took 1,610 MB with
# their primary key; a row's header, two UUIDs and the word cost more than the posting itself.
#
# Paragraph numbers: `collections_app_chunk.keyword_no`, drawn from one sequence whenever a paragraph's keyword
# index is written (inserted, or its search_vector changed), never reused. A row trigger draws it while holding the
# collection's keyword-statistics lock (the same advisory lock the statement triggers take), so within one collection
# numbers are drawn in commit order: every new paragraph's number is above every number already in the collection's
# blocks, and a word's new postings are appended to its last block. A removed paragraph's postings are taken out of
# the block holding them (the one with the greatest first number at or below it). The column is not a model field:
# nothing but these triggers writes it, and an insert that named it would draw no number.
#
# The chunk table's GIN index on search_vector goes: since the postings (0013) nothing searched with @@.
# `collections_app_keywordposting` stays as a view over the blocks, one row per (word, paragraph), for inspection
# and tests (nothing in search reads it).
from importlib import import_module

import django.contrib.postgres.fields
from django.db import migrations, models

_stats = import_module("collections_app.migrations.0007_keyword_stats_triggers")
_postings = import_module("collections_app.migrations.0013_keyword_postings")
_skips = import_module("collections_app.migrations.0028_keyword_delete_skips_dropped_collections")

# Paragraphs per block: 128 postings are 1 KB of arrays, so a block row stays below the 2 KB at which PostgreSQL
# would move it out of line (TOAST), and a common word's postings are read a block per row.
BLOCK = 128
# tf (at most 256 positions a word in a tsvector) above 22 bits of length.
PACK_SHIFT = 22
LENGTH_MASK = (1 << PACK_SHIFT) - 1
# An offset is an int4: a word's last block takes new paragraphs only while they stay this close to its first.
MAX_OFFSET = 2_000_000_000

NUMBERING = """
CREATE SEQUENCE kb_keyword_no AS bigint;
ALTER TABLE collections_app_chunk ADD COLUMN keyword_no bigint;
-- Numbers change no keyword: the statistics' update trigger would join every row with itself to find that out.
ALTER TABLE collections_app_chunk DISABLE TRIGGER kb_keyword_stats_update;
-- Numbered a collection at a time, so a collection's paragraphs are close together.
UPDATE collections_app_chunk c SET keyword_no = n.no
    FROM (SELECT id, nextval('kb_keyword_no') AS no
          FROM (SELECT id FROM collections_app_chunk WHERE search_vector IS NOT NULL
                ORDER BY collection_id, document_id, generation, ordinal) o) n
    WHERE c.id = n.id;
ALTER TABLE collections_app_chunk ENABLE TRIGGER kb_keyword_stats_update;
CREATE UNIQUE INDEX chunk_keyword_no ON collections_app_chunk (keyword_no);

CREATE OR REPLACE FUNCTION kb_keyword_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.search_vector IS NULL THEN
        NEW.keyword_no := NULL;
    ELSE
        -- kb_keyword_stats_lock's lock, taken directly: this runs for every row.
        PERFORM pg_advisory_xact_lock(hashtextextended('kb_keyword_stats:' || NEW.collection_id::text, 0));
        NEW.keyword_no := nextval('kb_keyword_no');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER kb_keyword_number_insert BEFORE INSERT ON collections_app_chunk
    FOR EACH ROW EXECUTE FUNCTION kb_keyword_number();
CREATE TRIGGER kb_keyword_number_update BEFORE UPDATE OF search_vector ON collections_app_chunk
    FOR EACH ROW WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector)
    EXECUTE FUNCTION kb_keyword_number();
"""

TABLE = """
CREATE TABLE collections_app_keywordblock (
    collection_id uuid NOT NULL,
    lexeme text NOT NULL,
    base bigint NOT NULL,
    offs integer[] NOT NULL,
    packs integer[] NOT NULL,
    max_tf smallint NOT NULL,
    min_length integer NOT NULL,
    CONSTRAINT keyword_block_pk PRIMARY KEY (collection_id, lexeme, base)
);
ALTER TABLE collections_app_keywordblock SET (autovacuum_vacuum_insert_scale_factor = 0.05);
"""

VIEW = f"""
CREATE VIEW collections_app_keywordposting AS
    SELECT b.collection_id, b.lexeme, c.id AS chunk_id, b.base + x.off AS keyword_no,
           (x.pack >> {PACK_SHIFT})::smallint AS tf, x.pack & {LENGTH_MASK} AS length
    FROM collections_app_keywordblock b
    CROSS JOIN LATERAL unnest(b.offs, b.packs) x(off, pack)
    LEFT JOIN collections_app_chunk c ON c.keyword_no = b.base + x.off;
"""


def _fresh(source: str) -> str:
    """One row per (paragraph, word) of `source`: collection, word, paragraph number and its packed tf and length."""
    return f"""
        SELECT r.collection_id, u.lexeme, r.keyword_no AS no,
               (coalesce(array_length(u.positions, 1), 1) << {PACK_SHIFT}) | r.length AS pack
        FROM (SELECT s.collection_id, s.keyword_no, s.search_vector,
                     kb_tsvector_length(s.search_vector)::integer AS length
              FROM {source} s WHERE s.search_vector IS NOT NULL OFFSET 0) r,
             unnest(r.search_vector) u"""


def _append(source: str) -> str:
    """The postings of `source`'s paragraphs added to their words' blocks: the last block of each word topped up to
    BLOCK, the rest in new blocks of BLOCK (their numbers are above every number already there; see the header)."""
    return f"""
    WITH fresh AS MATERIALIZED ({_fresh(source)}
    ), words AS MATERIALIZED (
        SELECT collection_id, lexeme, min(no) AS low, max(no) AS high FROM fresh GROUP BY collection_id, lexeme
    ), room AS MATERIALIZED (
        SELECT w.collection_id, w.lexeme, b.base,
               CASE WHEN b.base IS NULL OR w.high - b.base > {MAX_OFFSET} OR w.low <= b.base THEN 0
                    ELSE {BLOCK} - cardinality(b.offs) END AS room
        FROM words w
        LEFT JOIN LATERAL (
            SELECT k.base, k.offs FROM collections_app_keywordblock k
            WHERE k.collection_id = w.collection_id AND k.lexeme = w.lexeme
            ORDER BY k.base DESC LIMIT 1
        ) b ON true
    ), placed AS MATERIALIZED (
        SELECT f.collection_id, f.lexeme, f.no, f.pack, r.base, r.room,
               row_number() OVER (PARTITION BY f.collection_id, f.lexeme ORDER BY f.no) AS i
        FROM fresh f JOIN room r ON r.collection_id = f.collection_id AND r.lexeme = f.lexeme
    ), topped AS (
        UPDATE collections_app_keywordblock k
        SET offs = k.offs || a.offs, packs = k.packs || a.packs,
            max_tf = greatest(k.max_tf, a.max_tf), min_length = least(k.min_length, a.min_length)
        FROM (
            SELECT collection_id, lexeme, base, array_agg((no - base)::integer ORDER BY no) AS offs,
                   array_agg(pack ORDER BY no) AS packs, max(pack >> {PACK_SHIFT})::smallint AS max_tf,
                   min(pack & {LENGTH_MASK}) AS min_length
            FROM placed WHERE i <= room GROUP BY collection_id, lexeme, base
        ) a
        WHERE k.collection_id = a.collection_id AND k.lexeme = a.lexeme AND k.base = a.base
    )
    INSERT INTO collections_app_keywordblock (collection_id, lexeme, base, offs, packs, max_tf, min_length)
        SELECT collection_id, lexeme, min(no), array_agg((no - first)::integer ORDER BY no), array_agg(pack ORDER BY no),
               max(pack >> {PACK_SHIFT})::smallint, min(pack & {LENGTH_MASK})
        FROM (
            SELECT p.*, min(no) OVER (PARTITION BY collection_id, lexeme, (i - room - 1) / {BLOCK}) AS first,
                   (i - room - 1) / {BLOCK} AS block
            FROM placed p WHERE i > room
        ) n
        GROUP BY collection_id, lexeme, block;
"""


def _remove(source: str) -> str:
    """The postings of `source`'s paragraphs taken out of the blocks holding them; a block left empty goes."""
    return f"""
    WITH gone AS MATERIALIZED ({_fresh(source)}
    ), held AS MATERIALIZED (
        SELECT g.collection_id, g.lexeme, b.base, array_agg((g.no - b.base)::integer) AS offs
        FROM gone g
        CROSS JOIN LATERAL (
            SELECT k.base FROM collections_app_keywordblock k
            WHERE k.collection_id = g.collection_id AND k.lexeme = g.lexeme AND k.base <= g.no
            ORDER BY k.base DESC LIMIT 1
        ) b
        GROUP BY g.collection_id, g.lexeme, b.base
    ), emptied AS (
        DELETE FROM collections_app_keywordblock k USING held h
        WHERE k.collection_id = h.collection_id AND k.lexeme = h.lexeme AND k.base = h.base
          AND k.offs <@ h.offs
    )
    -- The block's maxima stay: still bounds of what is left.
    UPDATE collections_app_keywordblock k
    SET (offs, packs) = (
        SELECT array_agg(x.off ORDER BY x.i), array_agg(x.pack ORDER BY x.i)
        FROM unnest(k.offs, k.packs) WITH ORDINALITY x(off, pack, i) WHERE NOT x.off = ANY(h.offs)
    )
    FROM held h
    WHERE k.collection_id = h.collection_id AND k.lexeme = h.lexeme AND k.base = h.base
      AND NOT k.offs <@ h.offs;
"""


def _fill(source: str) -> str:
    """Blocks made whole for every paragraph of `source`, numbers ascending, BLOCK to a block (the last one of a
    word shorter): the paragraphs' words sorted once, the blocks cut from that order."""
    return f"""
    INSERT INTO collections_app_keywordblock (collection_id, lexeme, base, offs, packs, max_tf, min_length)
        SELECT collection_id, lexeme, nos[1],
               ARRAY(SELECT n - nos[1] FROM unnest(nos) WITH ORDINALITY u(n, i) ORDER BY i)::integer[],
               packs, max_tf, min_length
        FROM (
            SELECT collection_id, lexeme, array_agg(no ORDER BY no) AS nos, array_agg(pack ORDER BY no) AS packs,
                   max(pack >> {PACK_SHIFT})::smallint AS max_tf, min(pack & {LENGTH_MASK}) AS min_length
            FROM (
                SELECT f.*, (row_number() OVER (PARTITION BY collection_id, lexeme ORDER BY no) - 1) / {BLOCK} AS block
                FROM ({_fresh(source)}) f
            ) f
            GROUP BY collection_id, lexeme, block
        ) g;
"""


def _stats_add(source: str) -> str:
    # 0013's statistics statements, without its postings insert.
    return _postings._add(source).split("INSERT INTO collections_app_keywordposting", 1)[0]


def _stats_subtract(source: str) -> str:
    return _postings._subtract(source).split("DELETE FROM collections_app_keywordposting", 1)[0]


# Collections whose paragraphs this transaction writes in bulk (collection import): the triggers leave them out and
# `kb_keyword_index_fill` builds their keyword index in one pass at the end (services/keyword_index.py). Per batch,
# the triggers topped up each word's last block and count: at a million paragraphs a thousand batches rewrote tens
# of millions of block and word rows, every old version kept until the one transaction ended.
DEFERRED = """
CREATE OR REPLACE FUNCTION kb_deferred_collections() RETURNS uuid[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(current_setting('kb.deferred_collections', true), ''), '{}')::uuid[]
$$;
"""
_LEFT_OUT = "collection_id = ANY(kb_deferred_collections())"
_NEW = f"(SELECT * FROM new_rows WHERE NOT {_LEFT_OUT})"
# What a delete subtracts: neither a collection being dropped (0028) nor one being filled in bulk.
_KEPT = f"(SELECT * FROM old_rows WHERE NOT collection_id = ANY(kb_dropped_collections()) AND NOT {_LEFT_OUT})"
_CHANGED_OLD = _postings.CHANGED_OLD.replace("WHERE o.", f"WHERE NOT o.{_LEFT_OUT} AND o.")
_CHANGED_NEW = _postings.CHANGED_NEW.replace("WHERE o.", f"WHERE NOT n.{_LEFT_OUT} AND o.")

FUNCTIONS = f"""
{DEFERRED}
CREATE OR REPLACE FUNCTION kb_keyword_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS {_NEW} THEN
        RETURN NULL;
    END IF;
    {_stats_add(_NEW)} {_append(_NEW)} RETURN NULL; END $$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS {_KEPT} THEN
        RETURN NULL;
    END IF;
    {_stats_subtract(_KEPT)} {_remove(_KEPT)} RETURN NULL; END $$;

CREATE OR REPLACE FUNCTION kb_keyword_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A count, not EXISTS (0027).
    IF (SELECT count(*) FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.search_vector IS DISTINCT FROM n.search_vector AND NOT n.{_LEFT_OUT}) = 0 THEN
        RETURN NULL;
    END IF;
    {_stats_subtract(_CHANGED_OLD)} {_remove(_CHANGED_OLD)}
    {_stats_add(_CHANGED_NEW)} {_append(_CHANGED_NEW)}
    RETURN NULL; END $$;

-- One collection's keyword index built whole from its paragraphs: what a bulk write ends with.
CREATE OR REPLACE FUNCTION kb_keyword_index_fill(target uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM kb_keyword_stats_lock(ARRAY[target]);
    -- The sort of every posting by word: in memory rather than in temporary files where it fits.
    PERFORM set_config('work_mem', '256MB', true);
    DELETE FROM collections_app_keywordblock WHERE collection_id = target;
    DELETE FROM collections_app_keywordterm WHERE collection_id = target;
    DELETE FROM collections_app_keywordstats WHERE collection_id = target;
    {_stats_add("(SELECT * FROM collections_app_chunk WHERE collection_id = target)")}
    {_fill("(SELECT * FROM collections_app_chunk WHERE collection_id = target)")}
END $$;
"""

# Paragraphs indexed before this migration, into blocks of BLOCK in number order.
BACKFILL = f"""
LOCK TABLE collections_app_chunk IN SHARE ROW EXCLUSIVE MODE;
{_fill("collections_app_chunk")}
ANALYZE collections_app_keywordblock;
"""

FORWARD = (
    NUMBERING
    + TABLE
    + BACKFILL
    + "DROP TABLE collections_app_keywordposting;"
    + VIEW
    + FUNCTIONS
    + "DROP INDEX IF EXISTS chunk_search_vector_gin;"
)


def _reverse() -> str:
    # 0027/0028's functions as they were (postings by row), the postings table refilled from the tsvectors.
    fixes = import_module("collections_app.migrations.0027_keyword_update_trigger_skips_unchanged")
    return f"""
    DROP VIEW collections_app_keywordposting;
    {_postings.TABLE}
    {_postings.FUNCTIONS}
    {fixes.SKIPPING}
    {_skips.SKIPPING}
    {_postings.BACKFILL}
    DROP TABLE collections_app_keywordblock;
    DROP TRIGGER kb_keyword_number_insert ON collections_app_chunk;
    DROP TRIGGER kb_keyword_number_update ON collections_app_chunk;
    DROP FUNCTION kb_keyword_number();
    DROP FUNCTION IF EXISTS kb_keyword_index_fill(uuid);
    DROP FUNCTION IF EXISTS kb_deferred_collections();
    ALTER TABLE collections_app_chunk DROP COLUMN keyword_no;
    DROP SEQUENCE kb_keyword_no;
    CREATE INDEX chunk_search_vector_gin ON collections_app_chunk USING gin (search_vector);
    """


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0033_document_trash")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name="chunk_search_vector_gin"),
                migrations.DeleteModel(name="KeywordPosting"),
                migrations.CreateModel(
                    name="KeywordPosting",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "collection_id",
                                "lexeme",
                                "keyword_no",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("collection_id", models.UUIDField()),
                        ("lexeme", models.TextField()),
                        ("keyword_no", models.BigIntegerField()),
                        ("chunk_id", models.UUIDField(null=True)),
                        ("tf", models.SmallIntegerField()),
                        (
                            "length",
                            models.IntegerField(help_text="Word positions of the paragraph (its BM25 length)."),
                        ),
                    ],
                    options={"managed": False},
                ),
                migrations.CreateModel(
                    name="KeywordBlock",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "collection_id",
                                "lexeme",
                                "base",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("collection_id", models.UUIDField()),
                        ("lexeme", models.TextField()),
                        ("base", models.BigIntegerField()),
                        (
                            "offs",
                            django.contrib.postgres.fields.ArrayField(base_field=models.IntegerField(), size=None),
                        ),
                        (
                            "packs",
                            django.contrib.postgres.fields.ArrayField(base_field=models.IntegerField(), size=None),
                        ),
                        ("max_tf", models.SmallIntegerField()),
                        ("min_length", models.IntegerField()),
                    ],
                ),
            ],
            database_operations=[migrations.RunSQL(sql=FORWARD, reverse_sql=_reverse())],
        ),
    ]
