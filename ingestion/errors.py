"""What a parser raises when a file cannot be read. Its own module, below every parser, so the parsers and
the dispatcher that imports them (parsing.py) never import each other."""

from __future__ import annotations


class NothingReadable(ValueError):
    """The file parsed, but no text could be read from it."""


class ParserUnavailable(RuntimeError):
    """A parser needs a program this machine does not have; the message names the install step."""
