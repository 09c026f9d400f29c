"""Records counted before a structured file is loaded whole: the rows budget (KB_MAX_ROWS) of JSON, YAML and XML.

Loading builds every record in memory (json/yaml build the whole tree, the XML parser every element) and then
flattens each: a file of a million small records costs gigabytes before a budget could refuse it. Here each
format is read as a stream of events by its own library — ijson (yajl2's C backend) for JSON, PyYAML's event
parser (libyaml) for YAML, defusedxml's iterparse for XML — counting the records where `_structured` would find
them, and stopping at the first one over. Nothing is built but the path being walked.

A count the stream cannot decide (a records_path through an array index, a file the stream cannot read) is
left to the loader, which counts again after loading: the budget still holds, only later.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def records_over(path: Path, ext: str, records_path: str, limit: int) -> bool:
    """Whether the file holds more than `limit` records where reading it would find them."""
    parts = [p for p in records_path.split(".") if p] if records_path else []
    if any(p.isdigit() for p in parts):
        return False  # an array index: the event streams do not number items; the loader counts
    counters = {".json": _json_records, ".yaml": _yaml_records, ".yml": _yaml_records, ".xml": _xml_records}
    count = counters.get(ext)
    if count is None:
        return False
    seen = 0
    try:
        with open(path, "rb") as handle:
            for _ in count(handle, parts):
                seen += 1
                if seen > limit:
                    return True
    except Exception:  # a file the stream cannot read: the loader says what is wrong with it
        return False
    return False


def _json_records(handle: IO[bytes], parts: list[str]) -> Iterator[None]:
    import ijson

    if handle.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
        handle.seek(0)  # the loader reads UTF-8 with or without Excel's byte order mark; so does this
    # ijson names an array's items "item": the root array's objects are at "item", data.items' at "data.items.item".
    where = ".".join([*parts, "item"])
    for prefix, event, _value in ijson.parse(handle):
        if event == "start_map" and prefix == where:
            yield None


def _yaml_records(handle: IO[bytes], parts: list[str]) -> Iterator[None]:
    """Mappings that are items of the sequence at `parts` (the root's, when empty), or, without a path, the
    documents of a file of several (they read as one array of them)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    # Each open container: [kind, its path of keys, for a mapping whether a key comes next, the last key].
    stack: list[list[Any]] = []
    for event in yaml.parse(handle, Loader=loader):
        if isinstance(event, yaml.DocumentStartEvent | yaml.DocumentEndEvent | yaml.StreamStartEvent):
            continue
        if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            stack.pop()
            _value_done(stack)
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        if stack and stack[-1][0] == "map" and stack[-1][2]:  # a key
            stack[-1][3] = event.value if isinstance(event, yaml.ScalarEvent) else None
            stack[-1][2] = False
            if isinstance(event, yaml.CollectionStartEvent):  # a complex key: walked, never a record's place
                stack.append(["seq" if isinstance(event, yaml.SequenceStartEvent) else "map", None, True, None])
            continue
        path = _child_path(stack)
        is_mapping = isinstance(event, yaml.MappingStartEvent | yaml.AliasEvent)
        if is_mapping and path is not None and _is_record_place(stack, path, parts):
            yield None
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append(["seq" if isinstance(event, yaml.SequenceStartEvent) else "map", path, True, None])
        else:
            _value_done(stack)


def _child_path(stack: list[list[Any]]) -> list[str] | None:
    if not stack:
        return []
    kind, path, _expect_key, key = stack[-1]
    if path is None:
        return None
    return path if kind == "seq" else [*path, str(key)]


def _is_record_place(stack: list[list[Any]], path: list[str], parts: list[str]) -> bool:
    if not stack:
        return not parts  # a document's root mapping: a record when the file holds several
    return stack[-1][0] == "seq" and path == parts


def _value_done(stack: list[list[Any]]) -> None:
    if stack and stack[-1][0] == "map":
        stack[-1][2] = True  # the next node is a key


def _xml_records(handle: IO[bytes], parts: list[str]) -> Iterator[None]:
    """Elements at `parts` below the root, or at `parts` from the root itself (as _structured reads the path)."""
    from defusedxml.ElementTree import iterparse

    if not parts:
        return  # XML is records only with a records_path
    path: list[str] = []
    for event, element in iterparse(handle, events=("start", "end")):
        tag = element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""
        if event == "start":
            path.append(tag)
            continue
        if path[1:] == parts or path == parts:
            yield None
        path.pop()
        if path:
            element.clear()  # what the count has walked past is not kept (the root keeps only empty children)
