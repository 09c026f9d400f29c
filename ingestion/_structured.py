"""Structured data (.json .yaml .yml .xml) → records (a Table) or blocks flattened by path.

- JSON/YAML whose root is an array of objects, or whose `records_path` (dotted, e.g. "data.items") points
  at one, is records: each object a row, nested objects as dotted columns ("owner.name").
- Anything else is flattened by path: each object's scalar values become "key: value" lines under a section
  trail of the keys that lead to it, so a paragraph knows it came from `database.replicas`.
- XML is flattened by element path the same way (the root element is the document, as a JSON root is);
  `records_path` names repeated elements ("books.book") to read them as records.

PyYAML's safe loader builds no Python objects from tags; defusedxml refuses entity expansion and external
references (billion laughs, XXE). Documents are parsed from memory, so parser messages never name a path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from ._sheets import Row, Table
from .blocks import Block
from .errors import NothingReadable
from .values import as_text

# Values a file may expand to: YAML aliases can make a small file expand exponentially.
_MAX_NODES = 2_000_000
_MAX_DEPTH = 64


class RecordsPathNotFound(NothingReadable):
    """records_path does not lead to an array of objects; the message says what is there instead."""


@dataclass
class Structured:
    tables: list[Table] = field(default_factory=list)  # records
    blocks: list[Block] = field(default_factory=list)  # flattened
    warnings: list[str] = field(default_factory=list)
    is_records: bool = False


def read_structured(path: Path, ext: str, records_path: str) -> Structured:
    data = path.read_bytes()
    if ext == ".xml":
        return _read_xml(data, records_path)
    root = _load_json(data) if ext == ".json" else _load_yaml(data)
    if _expanded_size(root, {}, 0) > _MAX_NODES:
        raise NothingReadable(f"the file holds more than {_MAX_NODES:,} values (or aliases that expand to them)")
    if records_path:
        items = _at_path(root, records_path)
        return Structured(tables=[_records_table(items, records_path)], is_records=True)
    if _is_records(root):
        return Structured(tables=[_records_table(root, "")], is_records=True)
    blocks: list[Block] = []
    _flatten(root, [], blocks, 0)
    return Structured(blocks=blocks, warnings=_records_hint(root))


def _expanded_size(node: Any, sizes: dict[int, int], depth: int) -> int:
    """How many values reading `node` visits, counting shared (aliased) parts once per use, computed once each."""
    if not isinstance(node, dict | list) or depth > _MAX_DEPTH:
        return 1
    if id(node) not in sizes:
        children = node.values() if isinstance(node, dict) else node
        sizes[id(node)] = 1 + sum(_expanded_size(child, sizes, depth + 1) for child in children)
    return sizes[id(node)]


# --- loading ------------------------------------------------------------------------------------------------


def _text_of(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NothingReadable(f"the {what} is not UTF-8 text (byte {exc.start})") from exc


def _load_json(data: bytes) -> Any:
    try:
        return json.loads(_text_of(data, "JSON"))
    except json.JSONDecodeError as exc:
        raise NothingReadable(f"the JSON is not valid: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise NothingReadable("the JSON nests too deeply to read") from exc


def _load_yaml(data: bytes) -> Any:
    import yaml

    try:
        documents = list(yaml.safe_load_all(_text_of(data, "YAML")))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "it could not be parsed"
        raise NothingReadable(f"the YAML is not valid: {problem}{where}") from exc
    documents = [d for d in documents if d is not None]
    # Several documents (--- separated) read as one array of them.
    return documents[0] if len(documents) == 1 else documents


# --- records ------------------------------------------------------------------------------------------------


def _is_records(node: Any) -> bool:
    return isinstance(node, list) and bool(node) and all(isinstance(item, dict) for item in node)


def _describe(node: Any) -> str:
    if isinstance(node, dict):
        return "an object"
    if isinstance(node, list):
        return "an empty array" if not node else "an array of other things than objects"
    return f"a single value ({type(node).__name__})"


def _at_path(root: Any, dotted: str) -> list[dict[str, Any]]:
    node: Any = root
    walked: list[str] = []
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            here = ".".join(walked) or "the root"
            keys = f"; its keys: {', '.join(map(str, list(node)[:20]))}" if isinstance(node, dict) else ""
            raise RecordsPathNotFound(f'records_path "{dotted}" was not found: {here} has no "{part}"{keys}')
        walked.append(part)
    if not _is_records(node):
        raise RecordsPathNotFound(f'records_path "{dotted}" leads to {_describe(node)}, not an array of objects')
    return node


def _records_table(items: list[dict[str, Any]], records_path: str) -> Table:
    of = f" of {records_path}" if records_path else ""
    flat = [_flat_record(item) for item in items]
    header = list(dict.fromkeys(key for record in flat for key in record))
    rows = [
        Row([record.get(key) for key in header], f"record {number}{of} (counting from 1)")
        for number, record in enumerate(flat, start=1)
    ]
    return Table(header, rows)


def _flat_record(item: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """{"owner": {"name": "x"}, "tags": ["a", "b"]} → {"owner.name": "x", "tags": "a, b"}."""
    flat: dict[str, Any] = {}
    for key, value in item.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < _MAX_DEPTH:
            flat.update(_flat_record(value, f"{name}.", depth + 1))
        elif isinstance(value, list):
            if all(_scalar(v) for v in value):
                flat[name] = ", ".join(as_text(v) for v in value if v is not None) or None
            else:
                flat[name] = json.dumps(value, ensure_ascii=False, default=str)
        elif isinstance(value, dict):
            flat[name] = json.dumps(value, ensure_ascii=False, default=str)
        else:
            flat[name] = value if isinstance(value, int | float | bool | str) or value is None else as_text(value)
    return flat


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _records_hint(root: Any) -> list[str]:
    """Point at the largest array of objects near the top: it was probably meant as records."""
    best: tuple[int, str] | None = None
    stack: list[tuple[Any, list[str]]] = [(root, [])]
    while stack:
        node, path = stack.pop()
        if len(path) > 3 or not isinstance(node, dict):
            continue
        for key, value in node.items():
            here = [*path, str(key)]
            if _is_records(value) and len(value) >= 2 and (best is None or len(value) > best[0]):
                best = (len(value), ".".join(here))
            stack.append((value, here))
    if best is None:
        return []
    count, where = best
    return [
        f"{where} holds an array of {count} objects; it was read as text by path. Send the ingest option "
        f'{{"records_path": "{path}"}} to read each object as a record (one paragraph each, filterable).'
    ]


# --- flattening by path -------------------------------------------------------------------------------------


def _flatten(node: Any, path: list[str], out: list[Block], depth: int) -> None:
    """Scalar values become "key: value" lines, in order, under the trail of keys that leads to them."""
    if depth > _MAX_DEPTH:
        out.append(Block(json.dumps(node, ensure_ascii=False, default=str), "paragraph", section=list(path)))
        return
    lines: list[str] = []

    def flush() -> None:
        if lines:
            out.append(Block("\n".join(lines), "paragraph", section=list(path)))
            lines.clear()

    if isinstance(node, dict):
        for key, value in node.items():
            if _scalar(value):
                if value is not None and as_text(value):
                    lines.append(f"{key}: {as_text(value)}")
            elif isinstance(value, list) and all(_scalar(v) for v in value):
                if value:
                    lines.append(f"{key}: {', '.join(as_text(v) for v in value if v is not None)}")
            else:
                flush()
                _flatten(value, [*path, str(key)], out, depth + 1)
    elif isinstance(node, list):
        for item in node:  # the items of an array share its path
            if _scalar(item):
                if item is not None:
                    lines.append(as_text(item))
            else:
                flush()
                _flatten(item, path, out, depth + 1)
    elif node is not None:
        lines.append(as_text(node))
    flush()


# --- XML ----------------------------------------------------------------------------------------------------


def _parse_xml(data: bytes) -> Element:
    import defusedxml
    from defusedxml import ElementTree

    try:
        return ElementTree.fromstring(data)
    except defusedxml.DefusedXmlException as exc:
        raise NothingReadable("the XML declares entities or external references, which kbsite does not expand") from exc
    except ElementTree.ParseError as exc:
        raise NothingReadable(f"the XML is not well-formed ({exc})") from exc


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _read_xml(data: bytes, records_path: str) -> Structured:
    # The element count is bounded by the file's size: defusedxml refuses the entities that could inflate it.
    root = _parse_xml(data)
    if records_path:
        elements = _xml_at_path(root, records_path)
        flat = [_xml_record(element) for element in elements]
        header = list(dict.fromkeys(key for record in flat for key in record))
        rows = [
            Row([record.get(key) for key in header], f"record {n} of {records_path} (counting from 1)")
            for n, record in enumerate(flat, start=1)
        ]
        return Structured(tables=[Table(header, rows)], is_records=True)
    blocks: list[Block] = []
    _flatten_xml(root, [], blocks, 0)
    return Structured(blocks=blocks)


def _xml_at_path(root: Any, dotted: str) -> list[Any]:
    parts = dotted.split(".")
    if parts[0] == _local(root.tag) and len(parts) > 1 and not any(_local(c.tag) == parts[0] for c in root):
        parts = parts[1:]  # the path may start with the root element's own name
    current = [root]
    for part in parts:
        current = [child for element in current for child in element if _local(child.tag) == part]
        if not current:
            raise RecordsPathNotFound(f'records_path "{dotted}" was not found: no element {part} at that path')
    return current


def _xml_record(element: Element, prefix: str = "") -> dict[str, Any]:
    """Attributes and child elements as columns; nested elements as dotted columns; repeats joined."""
    record: dict[str, Any] = {}

    def put(key: str, value: str) -> None:
        if value:
            record[key] = f"{record[key]}, {value}" if key in record else value

    for name, value in element.attrib.items():
        put(f"{prefix}{_local(name)}", value.strip())
    for child in element:
        key = f"{prefix}{_local(child.tag)}"
        if len(child) == 0 and not child.attrib:
            put(key, (child.text or "").strip())
        else:
            for sub, value in _xml_record(child, f"{key}.").items():
                put(sub, value)
    text = (element.text or "").strip()
    if text:
        put(prefix.rstrip(".") or _local(element.tag), text)
    return record


def _flatten_xml(element: Element, path: list[str], out: list[Block], depth: int) -> None:
    lines = [f"{_local(name)}: {value.strip()}" for name, value in element.attrib.items() if value.strip()]

    def flush() -> None:
        if lines:
            out.append(Block("\n".join(lines), "paragraph", section=list(path)))
            lines.clear()

    if text := (element.text or "").strip():
        lines.append(text)
    for child in element:
        tag = _local(child.tag)
        if len(child) == 0 and not child.attrib:
            if text := (child.text or "").strip():
                lines.append(f"{tag}: {text}")
        elif depth < _MAX_DEPTH:
            flush()
            _flatten_xml(child, [*path, tag], out, depth + 1)
        if tail := (child.tail or "").strip():
            lines.append(tail)
    flush()
