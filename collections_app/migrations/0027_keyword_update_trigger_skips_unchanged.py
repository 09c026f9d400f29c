# Hand-written: the keyword statistics' update trigger (0013) returns at once when no row of the statement changed
# its search_vector. Moving a document's later paragraphs one ordinal along (a split or a merge near its start)
# updates ~2,000 rows and changes no keyword: without this the trigger joined the old and new rows eight times
# over to find nothing to do (600 ms of a 1 s split of a 2,000-paragraph document).
from importlib import import_module

from django.db import migrations

_postings = import_module("collections_app.migrations.0013_keyword_postings")
_WORK = f"{_postings._subtract(_postings.CHANGED_OLD)} {_postings._add(_postings.CHANGED_NEW)}"

SKIPPING = f"""
CREATE OR REPLACE FUNCTION kb_keyword_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A count, not EXISTS: EXISTS plans a fast-start nested loop, old rows times new rows (4 million pairs for
    -- 2,000 rows); the count hashes the join.
    IF (SELECT count(*) FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.search_vector IS DISTINCT FROM n.search_vector) = 0 THEN
        RETURN NULL;
    END IF;
    {_WORK} RETURN NULL; END $$;
"""
# 0013's function, as it was.
ALWAYS = f"""
CREATE OR REPLACE FUNCTION kb_keyword_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {_WORK} RETURN NULL; END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0026_collection_files")]

    operations = [migrations.RunSQL(sql=SKIPPING, reverse_sql=ALWAYS)]
