# Hand-written: Hebrew words in the keyword index with and without the one-letter prefixes glued to them.
#
# Hebrew writes "and", "the", "in", "to", "from", "that", "as" (ו ה ב ל מ ש כ) as letters glued to the next word, and
# in runs: "ובבית" is "and in the house", "שהספר" "that the book". PostgreSQL has no Hebrew stemmer, so a Hebrew
# paragraph was indexed under 'simple' twice and "בית" in a question never met "ובבית" in a paragraph (bench/
# hebrew_keywords.py: plain BM25 beat the hybrid search on Hebrew questions). What runs on any PostgreSQL, a managed
# one included (no dictionary files to install), is a light stemmer in SQL:
#
# - kb_hebrew_forms(word): the words a Hebrew word may be once a run of prefixes is taken off, by the prefixes'
#   grammar (ו, then ש/כש/מש/לכש, then one of ב כ ל מ, then ה), at least two letters left: "ובבית" → בבית, בית;
#   "הספר" → ספר. Every reading is kept (no dictionary says which is right): a wrong one ("שמלה" → מלה) is a rare
#   word that both sides share, and BM25 weighs it by how rare it is.
# - kb_language_vector(language, text): the half of a paragraph's keyword index that its language's stemmer gives.
#   For Hebrew, each word's prefix-stripped forms at the word's own positions (the word itself when nothing strips),
#   as a stemmer gives one stem per word (a word with two readings counts in both); for every other language,
#   exactly to_tsvector(kb_ts_config(language), text) as before (the function is inlined). The other half stays
#   to_tsvector('simple', text): the surface words, as every language has them.
#
# The question gets the same forms (retrieval/selectors/search/_keyword.py), so "הבית", "לבית" and "ובבית" meet at
# "בית" from either side. Hebrew paragraphs already indexed are indexed again here; the keyword triggers keep the
# statistics and postings in the same transaction.
from django.db import migrations

FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION kb_hebrew_forms(word text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(substr(word, n + 1) ORDER BY n), '{}')
    FROM generate_series(1, least(5, length(word) - 2)) n
    WHERE word ~ '^[ובכלמשה][א-ת]{2,}$' AND substr(word, 1, n) ~ '^ו?(ש|כש|מש|לכש)?[בכלמ]?ה?$'
$$;

CREATE OR REPLACE FUNCTION kb_hebrew_vector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- A tsvector's text form is the one way to give a lexeme chosen positions (its input sorts them). The forms are
    -- kb_hebrew_forms' rule, worked out in this join rather than by calling it per word (a call is not inlined):
    -- over bench/data/hebrew's paragraphs (~45 words) 7.0 ms a paragraph with the call, 1.3 ms with the join, 0.4 ms
    -- for the index before this migration, on a loaded machine.
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

CREATE OR REPLACE FUNCTION kb_language_vector(language text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN split_part(coalesce(language, ''), '-', 1) = 'he' THEN kb_hebrew_vector(body)
                ELSE to_tsvector(kb_ts_config(language), body) END
$$;
"""

REINDEX = """
UPDATE collections_app_chunk SET search_vector = {vector}
WHERE search_vector IS NOT NULL AND split_part(coalesce(language, ''), '-', 1) = 'he';
"""
NEW = "kb_language_vector(language, text) || to_tsvector('simple', text)"
OLD = "to_tsvector(kb_ts_config(language), text) || to_tsvector('simple', text)"

REVERSE = (
    REINDEX.format(vector=OLD)
    + """
DROP FUNCTION IF EXISTS kb_language_vector(text, text);
DROP FUNCTION IF EXISTS kb_hebrew_vector(text);
DROP FUNCTION IF EXISTS kb_hebrew_forms(text);
"""
)


class Migration(migrations.Migration):
    dependencies = [("collections_app", "0037_chunk_positions")]

    operations = [migrations.RunSQL(sql=FUNCTIONS + REINDEX.format(vector=NEW), reverse_sql=REVERSE)]
