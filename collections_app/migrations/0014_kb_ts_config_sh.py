# Hand-written: Serbian, Croatian and Bosnian share the label `sh` (ingestion/languages.py),
# stemmed by PostgreSQL's `serbian` snowball configuration, which reads Cyrillic and Latin alike; the labels
# written before (`sr`, `hr`, `bs`) map to it too. Only the function changes: no index is built on it, and a
# paragraph keeps the keyword index it was built with until it is relabelled or re-indexed.
from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION kb_ts_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE split_part(coalesce(language, ''), '-', 1)
        WHEN 'ar' THEN 'arabic'::regconfig
        WHEN 'ca' THEN 'catalan'::regconfig
        WHEN 'da' THEN 'danish'::regconfig
        WHEN 'de' THEN 'german'::regconfig
        WHEN 'el' THEN 'greek'::regconfig
        WHEN 'en' THEN 'english'::regconfig
        WHEN 'es' THEN 'spanish'::regconfig
        WHEN 'et' THEN 'estonian'::regconfig
        WHEN 'eu' THEN 'basque'::regconfig
        WHEN 'fi' THEN 'finnish'::regconfig
        WHEN 'fr' THEN 'french'::regconfig
        WHEN 'ga' THEN 'irish'::regconfig
        WHEN 'hi' THEN 'hindi'::regconfig
        WHEN 'hu' THEN 'hungarian'::regconfig
        WHEN 'hy' THEN 'armenian'::regconfig
        WHEN 'id' THEN 'indonesian'::regconfig
        WHEN 'it' THEN 'italian'::regconfig
        WHEN 'lt' THEN 'lithuanian'::regconfig
        WHEN 'ne' THEN 'nepali'::regconfig
        WHEN 'nl' THEN 'dutch'::regconfig
        WHEN 'no' THEN 'norwegian'::regconfig
        WHEN 'pt' THEN 'portuguese'::regconfig
        WHEN 'ro' THEN 'romanian'::regconfig
        WHEN 'ru' THEN 'russian'::regconfig
        WHEN 'sr' THEN 'serbian'::regconfig
        WHEN 'sh' THEN 'serbian'::regconfig
        WHEN 'hr' THEN 'serbian'::regconfig
        WHEN 'bs' THEN 'serbian'::regconfig
        WHEN 'sv' THEN 'swedish'::regconfig
        WHEN 'ta' THEN 'tamil'::regconfig
        WHEN 'tr' THEN 'turkish'::regconfig
        WHEN 'yi' THEN 'yiddish'::regconfig
        ELSE 'simple'::regconfig
    END
$$;
"""

# 0004's function, for the way back.
PREVIOUS = """
CREATE OR REPLACE FUNCTION kb_ts_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE split_part(coalesce(language, ''), '-', 1)
        WHEN 'ar' THEN 'arabic'::regconfig
        WHEN 'ca' THEN 'catalan'::regconfig
        WHEN 'da' THEN 'danish'::regconfig
        WHEN 'de' THEN 'german'::regconfig
        WHEN 'el' THEN 'greek'::regconfig
        WHEN 'en' THEN 'english'::regconfig
        WHEN 'es' THEN 'spanish'::regconfig
        WHEN 'et' THEN 'estonian'::regconfig
        WHEN 'eu' THEN 'basque'::regconfig
        WHEN 'fi' THEN 'finnish'::regconfig
        WHEN 'fr' THEN 'french'::regconfig
        WHEN 'ga' THEN 'irish'::regconfig
        WHEN 'hi' THEN 'hindi'::regconfig
        WHEN 'hu' THEN 'hungarian'::regconfig
        WHEN 'hy' THEN 'armenian'::regconfig
        WHEN 'id' THEN 'indonesian'::regconfig
        WHEN 'it' THEN 'italian'::regconfig
        WHEN 'lt' THEN 'lithuanian'::regconfig
        WHEN 'ne' THEN 'nepali'::regconfig
        WHEN 'nl' THEN 'dutch'::regconfig
        WHEN 'no' THEN 'norwegian'::regconfig
        WHEN 'pt' THEN 'portuguese'::regconfig
        WHEN 'ro' THEN 'romanian'::regconfig
        WHEN 'ru' THEN 'russian'::regconfig
        WHEN 'sr' THEN 'serbian'::regconfig
        WHEN 'sv' THEN 'swedish'::regconfig
        WHEN 'ta' THEN 'tamil'::regconfig
        WHEN 'tr' THEN 'turkish'::regconfig
        WHEN 'yi' THEN 'yiddish'::regconfig
        ELSE 'simple'::regconfig
    END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0013_keyword_postings")]

    operations = [migrations.RunSQL(sql=FUNCTION, reverse_sql=PREVIOUS)]
