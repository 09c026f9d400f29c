"""The corpus map: a collection's table of contents, built from what its paragraphs store — no model call.

Each document that has readable paragraphs is listed with its title and the heading tree its paragraphs'
section trails make, each heading with how many paragraphs sit under it. The same rows always give the
same map: documents in title order (then file name, then id), headings in the order they first occur in
their document.

A per-reader collection is mapped for one registered reader: only paragraphs that reader may read count,
and a heading none of them sits under is not shown (a heading is content too: "Redundancies in Q3").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Min

from accounts.delegation import delegated_reader
from accounts.models import ApiKey
from collections_app.models import Chunk, Collection, Document
from collections_app.selectors import document_title
from infra.errors import Invalid
from infra.validation import text_problem


class MapReaderRequired(Invalid):
    field = "reader"


class MapReaderInvalid(Invalid):
    field = "reader"


@dataclass
class MapNode:
    """One heading: the paragraphs under it (subsections included) and those directly under it."""

    heading: str
    paragraphs: int = 0
    direct: int = 0
    first: int = 0  # the ordinal of its first paragraph: keeps headings in document order
    sections: dict[str, MapNode] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "heading": self.heading,
            "paragraphs": self.paragraphs,
            "direct": self.direct,
            "sections": [child.to_json() for child in _in_order(self.sections)],
        }


def collection_map_for_reader(*, key: ApiKey, collection: Collection, reader: str | None) -> dict[str, Any]:
    """The map as a key asks for it: a per-reader collection needs a registered reader of its tenant that the
    key may act for (delegation.py).

    The rule searches follow (retrieval/selectors/search/_scope.py): without a reader the map would quietly show only
    the unlabelled paragraphs; an unknown name is refused the same whether it exists in another tenant or not.
    Every door (REST, MCP) reaches the reader's name through here, so a name no row can hold (NUL, a lone
    surrogate) is refused here, before the database sees it.
    """
    problem = text_problem(reader) if reader is not None else None
    if problem:
        raise MapReaderInvalid(f"reader {problem}")
    if reader is None:
        if collection.per_reader:
            raise MapReaderRequired(
                f"{collection.name} is filtered per reader: name the registered reader the map is for in `reader`"
            )
        return {**collection_map(collection=collection), "reader": None}
    found = delegated_reader(key=key, name=reader)
    return {**collection_map(collection=collection, reader_labels=list(found.labels)), "reader": found.name}


def collection_map(*, collection: Collection, reader_labels: list[str] | None = None) -> dict[str, Any]:
    """The table of contents of `collection`'s searchable paragraphs, as the API and MCP hand it back.

    `reader_labels`: for a per-reader collection, the labels of the reader it is mapped for (the caller
    resolves the reader; None maps only what anybody may read: the unlabelled paragraphs).
    """
    rows = (
        Chunk.objects.for_tenant(collection.tenant_id)
        .filter(collection=collection)
        .live()
        .paragraphs()
        .readable_by(reader_labels)  # the rule of retrieval/selectors/search/_visibility.py
        # One row per (document, heading trail), not per paragraph: a 60 MB text file maps in one short query.
        .values("document_id", "section")
        .annotate(n=Count("id"), first=Min("position__ordinal"))
        .order_by()
    )
    trees: dict[Any, MapNode] = {}
    for row in rows:
        root = trees.setdefault(row["document_id"], MapNode(heading="", first=row["first"]))
        root.first = min(root.first, row["first"])
        _add(root, list(row["section"]), row["n"], row["first"])
    documents = (
        Document.objects.for_tenant(collection.tenant_id).filter(pk__in=trees).only("id", "filename", "metadata")
    )
    listed = sorted(((document_title(d), d.filename, str(d.pk), d) for d in documents), key=lambda item: item[:3])
    return {
        "collection": {"id": str(collection.pk), "name": collection.name},
        "documents": [
            {
                "id": doc_id,
                "title": title,
                "filename": filename,
                "paragraphs": trees[document.pk].paragraphs,
                "direct": trees[document.pk].direct,
                "sections": [node.to_json() for node in _in_order(trees[document.pk].sections)],
            }
            for title, filename, doc_id, document in listed
        ],
        "paragraphs": sum(tree.paragraphs for tree in trees.values()),
    }


def _add(root: MapNode, trail: list[str], count: int, first: int) -> None:
    node = root
    node.paragraphs += count
    for heading in trail:
        child = node.sections.get(heading)
        if child is None:
            child = node.sections[heading] = MapNode(heading=heading, first=first)
        child.first = min(child.first, first)
        child.paragraphs += count
        node = child
    node.direct += count


def _in_order(nodes: dict[str, MapNode]) -> list[MapNode]:
    return sorted(nodes.values(), key=lambda n: (n.first, n.heading))
