"""Raw SQL more than one service writes, spelled once: the keyword-index expression.

The database's own copies (kb_ts_config and the keyword-statistics triggers) live in migrations, which are
never edited; what is here must stay equivalent to them. Advisory locks are infrastructure (infra/locks.py).
"""

from __future__ import annotations


def keyword_vector(language: str = "language", text: str = "text") -> str:
    """The keyword index of a paragraph (Chunk.search_vector), as an SQL expression.

    Each paragraph is indexed with its own language's stemmer (kb_language_vector: kb_ts_config's snowball
    configuration, migration 0004; for Hebrew, which has none, its words without their glued prefixes, migration
    0038) and with the 'simple' configuration, so a question in another language (or a name, a code) still finds
    exact words. `language` and `text` are SQL expressions (columns, placeholders), never values.
    """
    return f"kb_language_vector({language}, {text}) || to_tsvector('simple', {text})"
