# Hand-written: a Hebrew or Yiddish word written with presentation forms is read as the same letters and points.
#
# Unicode writes a pointed letter two ways: the letter and its point (U+05D0 U+05B7, "אַ"), or one character of the
# Alphabetic Presentation Forms block (U+FB2E, "אַ" too). Yiddish text uses the second widely (אַ אָ פּ פֿ ײַ in
# U+FB1D-U+FB4F), and text taken out of PDFs often does. 0039 took the points off only the first way, so a paragraph
# with "גאָרטן" written with U+FB2F was found by keyword neither by an unpointed question ("גארטן") nor by a pointed
# one typed the usual way; nor was "װ" (U+05F0, the Yiddish double vav) by the two letters "וו" a keyboard types.
#
# The unpointed word (kb_hebrew_forms, and kb_hebrew_vector's inlined copy) is now taken from the word's
# compatibility decomposition when it holds a presentation form (normalize NFKD: U+FB2E is U+05D0 U+05B7, U+FB4F the
# letters אל), with the Yiddish ligatures װ ױ ײ spelled as their two letters, then its points taken off as before
# (and the Judeo-Spanish varika, U+FB1E, a point too). A word without either is read exactly as before. Hebrew
# paragraphs holding a presentation form or a ligature are indexed again here.
from django.db import migrations

POINTS = r"[\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\uFB1E]"
# 0039's, for the way back.
PREVIOUS_POINTS = r"[\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7]"
FORMS = r"[\uFB1D-\uFB4F]"


def plain(word: str, points: str = POINTS, forms: bool = True) -> str:
    """The SQL of `word` (an SQL expression) without its points, read through its presentation forms with `forms`."""
    if not forms:
        return f"regexp_replace({word}, '{points}', '', 'g')"
    decomposed = f"CASE WHEN {word} ~ '{FORMS}' THEN normalize({word}, NFKD) ELSE {word} END"
    letters = f"replace(replace(replace({decomposed}, 'װ', 'וו'), 'ױ', 'וי'), 'ײ', 'יי')"
    return f"regexp_replace({letters}, '{points}', '', 'g')"


def functions(word_plain: str, lexeme_plain: str) -> str:
    return rf"""
CREATE OR REPLACE FUNCTION kb_hebrew_forms(word text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(
        SELECT substr(p.plain, n + 1) FROM generate_series(1, least(5, length(p.plain) - 2)) n
        WHERE p.plain ~ '^[ובכלמשה][א-ת]{{2,}}$' AND substr(p.plain, 1, n) ~ '^ו?(ש|כש|מש|לכש)?[בכלמ]?ה?$'
        UNION SELECT p.plain WHERE p.plain NOT IN (word, '')
    )
    FROM (SELECT {word_plain} AS plain) p
$$;

CREATE OR REPLACE FUNCTION kb_hebrew_vector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- kb_hebrew_forms' rule worked out in this join rather than called per word (a call is not inlined; 0038).
    SELECT coalesce(string_agg(
        '''' || replace(replace(form, '\', '\\'), '''', '''''') || ''':' || positions, ' '), '')::tsvector
    FROM (
        SELECT f.form, string_agg(array_to_string(w.positions, ','), ',') AS positions
        FROM (
            SELECT u.lexeme, u.positions, {lexeme_plain} AS plain
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


FUNCTIONS = functions(plain("word"), plain("u.lexeme"))
PREVIOUS = functions(plain("word", PREVIOUS_POINTS, forms=False), plain("u.lexeme", PREVIOUS_POINTS, forms=False))

REINDEX = r"""
UPDATE collections_app_chunk SET search_vector = kb_language_vector(language, text) || to_tsvector('simple', text)
WHERE search_vector IS NOT NULL AND split_part(coalesce(language, ''), '-', 1) = 'he'
  AND text ~ '[\uFB1D-\uFB4F\u05F0-\u05F2]';
"""


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0039_hebrew_points")]

    operations = [migrations.RunSQL(sql=FUNCTIONS + REINDEX, reverse_sql=PREVIOUS + REINDEX)]
