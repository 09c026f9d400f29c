# Hand-written: Hebrew words in the keyword index and the question without their points (niqqud, cantillation).
#
# Vocalised Hebrew (scripture, poetry, children's books, dictionaries) writes vowel points and accents as combining
# marks inside the word: "בָּרָא" is "ברא" with four marks. PostgreSQL's parser keeps them in the word, so a
# vocalised paragraph was found by keyword only by a question pointed exactly alike, and kb_hebrew_forms (0038) took
# no prefix off a pointed word (its pattern is letters only). Now both sides read a word without its points as well:
#
# - kb_hebrew_forms(word): the prefix-stripped forms of the word without its points, and that unpointed word itself
#   when it differs from the word ("וּבַבַּיִת" → ובבית, בבית, בית).
# - kb_hebrew_vector(body): each word's kb_hebrew_forms at its position, the word itself when it has none (as before).
#
# The marks taken off are the points and accents only (U+0591-U+05BD, U+05BF, U+05C1-U+05C2, U+05C4-U+05C5, U+05C7):
# maqaf (U+05BE, the hyphen joining words), paseq and sof pasuq (U+05C0, U+05C3) and nun hafukha (U+05C6) are
# punctuation and stay where they are. The surface word stays in the index's 'simple' half, so a question pointed
# like the paragraph still meets it there. Hebrew paragraphs holding a point are indexed again here.
from django.db import migrations

POINTS = r"[\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7]"

FUNCTIONS = rf"""
CREATE OR REPLACE FUNCTION kb_hebrew_forms(word text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(
        SELECT substr(p.plain, n + 1) FROM generate_series(1, least(5, length(p.plain) - 2)) n
        WHERE p.plain ~ '^[ובכלמשה][א-ת]{{2,}}$' AND substr(p.plain, 1, n) ~ '^ו?(ש|כש|מש|לכש)?[בכלמ]?ה?$'
        UNION SELECT p.plain WHERE p.plain NOT IN (word, '')
    )
    FROM (SELECT regexp_replace(word, '{POINTS}', '', 'g') AS plain) p
$$;

CREATE OR REPLACE FUNCTION kb_hebrew_vector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- kb_hebrew_forms' rule worked out in this join rather than called per word (a call is not inlined; 0038).
    SELECT coalesce(string_agg(
        '''' || replace(replace(form, '\', '\\'), '''', '''''') || ''':' || positions, ' '), '')::tsvector
    FROM (
        SELECT f.form, string_agg(array_to_string(w.positions, ','), ',') AS positions
        FROM (
            SELECT u.lexeme, u.positions, regexp_replace(u.lexeme, '{POINTS}', '', 'g') AS plain
            FROM unnest(to_tsvector('simple', body)) u
        ) w
        CROSS JOIN LATERAL (SELECT ARRAY(
            SELECT substr(w.plain, n + 1) FROM generate_series(1, least(5, length(w.plain) - 2)) n
            WHERE w.plain ~ '^[ובכלמשה][א-ת]{{2,}}$' AND substr(w.plain, 1, n) ~ '^ו?(ש|כש|מש|לכש)?[בכלמ]?ה?$'
            UNION SELECT w.plain WHERE w.plain NOT IN (w.lexeme, '')
        ) AS forms) s
        CROSS JOIN LATERAL unnest(CASE WHEN cardinality(s.forms) > 0 THEN s.forms ELSE ARRAY[w.lexeme] END) f(form)
        GROUP BY 1
    ) v
$$;
"""

# 0038's functions, for the way back.
PREVIOUS = r"""
CREATE OR REPLACE FUNCTION kb_hebrew_forms(word text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(substr(word, n + 1) ORDER BY n), '{}')
    FROM generate_series(1, least(5, length(word) - 2)) n
    WHERE word ~ '^[ובכלמשה][א-ת]{2,}$' AND substr(word, 1, n) ~ '^ו?(ש|כש|מש|לכש)?[בכלמ]?ה?$'
$$;

CREATE OR REPLACE FUNCTION kb_hebrew_vector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(
        '''' || replace(replace(form, '\', '\\'), '''', '''''') || ''':' || positions, ' '), '')::tsvector
    FROM (
        SELECT coalesce(substr(u.lexeme, n + 1), u.lexeme) AS form,
               string_agg(array_to_string(u.positions, ','), ',') AS positions
        FROM unnest(to_tsvector('simple', body)) u
        LEFT JOIN LATERAL generate_series(1, least(5, length(u.lexeme) - 2)) n
          ON u.lexeme ~ '^[ובכלמשה][א-ת]{2,}$' AND substr(u.lexeme, 1, n) ~ '^ו?(ש|כש|מש|לכש)?[בכלמ]?ה?$'
        GROUP BY 1
    ) v
$$;
"""

REINDEX = rf"""
UPDATE collections_app_chunk SET search_vector = kb_language_vector(language, text) || to_tsvector('simple', text)
WHERE search_vector IS NOT NULL AND split_part(coalesce(language, ''), '-', 1) = 'he' AND text ~ '{POINTS}';
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0038_hebrew_prefixes")]

    operations = [migrations.RunSQL(sql=FUNCTIONS + REINDEX, reverse_sql=PREVIOUS + REINDEX)]
