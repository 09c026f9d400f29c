# Hand-written: the keyword statistics' delete trigger (0013) leaves out the paragraphs of a collection that is being
# deleted whole. collection_delete drops that collection's postings, word counts and totals by its id first (a
# range of each primary key) and names it in `kb.dropped_collections` for its transaction; before, the trigger
# joined every deleted paragraph's words with their postings, and for a collection of 300,000 paragraphs that one
# join spilled temporary files until the disk was full and the deletion failed.
from importlib import import_module

from django.db import migrations

_postings = import_module("collections_app.migrations.0013_keyword_postings")

# The collections named for this transaction (none unless collection_delete set them); '' after it resets them.
DROPPED = """
CREATE OR REPLACE FUNCTION kb_dropped_collections() RETURNS uuid[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(current_setting('kb.dropped_collections', true), ''), '{}')::uuid[]
$$;
"""
_KEPT = "(SELECT * FROM old_rows WHERE NOT collection_id = ANY(kb_dropped_collections()))"

SKIPPING = f"""
{DROPPED}
CREATE OR REPLACE FUNCTION kb_keyword_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS {_KEPT} THEN
        RETURN NULL;
    END IF;
    {_postings._subtract(_KEPT)} RETURN NULL; END $$;
"""
# 0013's function, as it was.
ALWAYS = f"""
CREATE OR REPLACE FUNCTION kb_keyword_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_postings._subtract("old_rows")} RETURN NULL; END $$;
DROP FUNCTION IF EXISTS kb_dropped_collections();
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0027_keyword_update_trigger_skips_unchanged")]

    operations = [migrations.RunSQL(sql=SKIPPING, reverse_sql=ALWAYS)]
