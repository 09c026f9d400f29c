"""Input checks shared by the API, the admin and the services: what may reach the database.

PostgreSQL refuses a NUL character in text and in JSONB, and a lone surrogate cannot be encoded
at all, so either one used to surface as a 500 from deep inside a query. Every string a caller
sends is checked here first, and every JSON value is walked (iteratively: a hostile document
must not exhaust Python's recursion) for depth and for the same string rules.

Plain functions return a problem (or None) so a service can raise its own domain error; the
serializer fields at the bottom raise DRF's ValidationError, which names the field.
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

from rest_framework import serializers

# Deeper than any filter, option or setting we take; deep enough that nobody sane hits it.
MAX_JSON_DEPTH = 32

# The longest paragraph text anything writes: an import's row, an editor's edit, split or merge (one limit, so
# whatever exports imports again).
MAX_PARAGRAPH_CHARS = 100_000

# Schemes a document's source_uri may carry: where it came from, as a person would follow it.
# folder:// is the platform's own, but only folder sources (set by the deployment) may use it.
SOURCE_URI_SCHEMES = ("upload://", "http://", "https://", "mailto:")


def text_problem(value: str) -> str | None:
    """Why this string cannot be stored, or None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (it holds a lone surrogate)"
    return None


def paragraph_text_problem(value: str) -> str | None:
    """Why this cannot be a paragraph's text, or None: the one check an edit, a split and an import share."""
    problem = text_problem(value)
    if problem:
        return problem
    if not value.strip():
        return "is blank: a paragraph needs some text; hide it to take it out of searches"
    if len(value) > MAX_PARAGRAPH_CHARS:
        return f"is too long ({len(value)} characters): a paragraph holds at most {MAX_PARAGRAPH_CHARS} characters"
    return None


def control_problem(value: str) -> str | None:
    """Why this string cannot be a name: a control character (a line break, a tab, a terminal escape)."""
    for char in value:
        if unicodedata.category(char) == "Cc":
            # Named by its code, never echoed: an escape sequence would act on whatever shows the message.
            return f"must not contain a control character (U+{ord(char):04X})"
    return None


def name_problem(value: str, *, max_chars: int) -> str | None:
    """A name must be text, non-blank, without control characters, and fit its column in characters and in
    UTF-8 bytes alike.

    A name is free text otherwise: it is bound as a parameter wherever it is used, never pasted into SQL, so
    "Trade Union Select Committee" is a name like any other.
    Bytes matter too: names end up in file paths and in headers, where the limit is in bytes
    (200 times 'é' is 200 characters but 400 bytes).
    """
    problem = text_problem(value) or control_problem(value)
    if problem:
        return problem
    if not value.strip():
        return "must not be blank"
    if len(value) > max_chars or len(value.encode("utf-8")) > max_chars:
        return f"is too long: at most {max_chars} characters, and {max_chars} bytes in UTF-8"
    return None


def json_problem(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> tuple[str, str] | None:
    """The first (path, problem) in a parsed JSON value: nesting too deep, a string that cannot be stored, or a
    number that is not finite (PostgreSQL's JSONB has no NaN or infinity: such a value fails deep in a write).

    The path names where it is: "" for the value itself, "status", "roles.0", "a.b".
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if depth > max_depth:
            return path, f"is nested too deeply (at most {max_depth} levels)"
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return path, problem
        elif isinstance(item, float) and not math.isfinite(item):
            return path, "is not a finite number (NaN and infinities cannot be stored)"
        elif isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{path}.{key}" if path else str(key)
                problem = text_problem(str(key))
                if problem:
                    # The key itself may be what cannot be printed: name its parent instead.
                    return path, f"has a key that {problem}"
                stack.append((child, child_path, depth + 1))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                stack.append((child, f"{path}.{index}" if path else str(index), depth + 1))
    return None


def source_uri_problem(value: str) -> str | None:
    """Where a document came from: one of SOURCE_URI_SCHEMES (a javascript: link is never echoed to readers)."""
    problem = text_problem(value)
    if problem:
        return problem
    lowered = value.strip().lower()
    if lowered.startswith("folder://"):
        return "folder:// addresses belong to folder sources, set by the deployment"
    if not lowered.startswith(SOURCE_URI_SCHEMES):
        return "must start with one of " + ", ".join(SOURCE_URI_SCHEMES)
    return None


def loads_bounded(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads that refuses NaN, Infinity and numbers past a float's range (1e400), and turns runaway nesting
    into ValueError, not RecursionError. The value's own depth is json_problem's to check."""

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not a finite number (NaN and infinities cannot be stored)")

    def finite(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):
            raise ValueError(f"{number[:40]} is not a finite number (NaN and infinities cannot be stored)")
        return value

    try:
        return json.loads(text, parse_constant=no_constants, parse_float=finite)
    except RecursionError:
        raise ValueError(f"JSON nested too deeply (at most {max_depth} levels)") from None


# --- serializer field helpers -------------------------------------------------------------------
# DRF's CharField already refuses NUL and surrogates; these cover what it does not: names bounded
# in bytes, JSON values (walked), dictionary keys, and source URIs.


class NameField(serializers.CharField):
    """A name that fits its column in characters and in UTF-8 bytes."""

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        super().__init__(max_length=max_length, **kwargs)
        self.max_chars = max_length

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        problem = name_problem(value, max_chars=self.max_chars)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class SafeJSONField(serializers.JSONField):
    """A JSON value whose strings can be stored and whose nesting is bounded; a form's text is parsed safely."""

    def to_internal_value(self, data: Any) -> Any:
        if self.binary or getattr(data, "is_json_string", False):
            if isinstance(data, bytes):
                data = data.decode("utf-8", errors="replace")
            try:
                data = loads_bounded(data)
            except ValueError as exc:
                raise serializers.ValidationError(f"not valid JSON: {exc}") from None
        found = json_problem(data)
        if found:
            path, problem = found
            raise serializers.ValidationError(f"{path} {problem}" if path else problem)
        return data


class SafeDictField(serializers.DictField):
    """A dictionary whose keys are checked like its values (DRF checks only the values)."""

    def __init__(self, *, max_key_length: int = 200, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_key_length = max_key_length

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        for key in value:
            problem = text_problem(str(key))
            if problem is None and len(str(key)) > self.max_key_length:
                problem = f"is too long (at most {self.max_key_length} characters)"
            if problem:
                raise serializers.ValidationError(f"a key {problem}")
        return value


class SourceUriField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        problem = source_uri_problem(value) if value else None
        if problem:
            raise serializers.ValidationError(problem)
        return value
