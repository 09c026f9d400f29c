"""kb_rate_take(): a rate limit's whole turn in one statement (doors/api/throttles.py), so a limited request
costs one round trip: the key's lock, forgetting requests older than the period, counting, taking a place."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION kb_rate_take(p_bucket text, p_limit integer, p_period double precision)
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_count integer;
    v_oldest timestamptz;
BEGIN
    -- One key's requests take turns, across every web process: two never both take the last place.
    PERFORM pg_advisory_xact_lock(hashtextextended('kbsite-rate:' || p_bucket, 0));
    DELETE FROM doors_ratehit WHERE bucket = p_bucket AND at <= v_now - make_interval(secs => p_period);
    SELECT count(*), min(at) INTO v_count, v_oldest FROM doors_ratehit WHERE bucket = p_bucket;
    IF v_count < p_limit THEN
        INSERT INTO doors_ratehit (bucket, at) VALUES (p_bucket, v_now);
        RETURN NULL;  -- taken
    END IF;
    RETURN v_oldest;  -- full: the place frees p_period after this request
END
$$;
"""

DROP = "DROP FUNCTION IF EXISTS kb_rate_take(text, integer, double precision);"


class Migration(migrations.Migration):
    dependencies = [("doors", "0001_rate_hits")]

    operations = [migrations.RunSQL(CREATE, DROP)]
