"""One page input for every list the API and the admin answer: `limit` and `offset` (the admin: a page number),
validated and capped, so a list is never read whole and no number from outside reaches PostgreSQL unchecked (an
offset past 2**63 was a 500, a negative limit was ignored: issue 39).

A list whose answer is a page object (`count`, `limit`, `offset`, `results`) pages in its body; a list that has
always answered a JSON array keeps that shape (its clients index it) and tells the rest in headers: `X-Total-Count`
and a `Link: <…>; rel="next"` while rows remain (docs/DECISIONS.md, "Every list bounded").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

# Larger than any offset a person pages to, small enough that PostgreSQL's OFFSET never overflows.
MAX_OFFSET = 1_000_000


def _whole_number(name: str, low: int, high: int, help_text: str, **default: Any) -> serializers.IntegerField:
    message = f"{name} must be a whole number from {low} to {high}"
    return serializers.IntegerField(
        min_value=low, max_value=high, help_text=help_text, **default,
        error_messages={key: message for key in ("invalid", "min_value", "max_value", "max_string_length", "null")},
    )  # fmt: skip


class PageInput(serializers.Serializer):
    """A list's `limit` (1 to `max_limit`, `default_limit` when absent) and `offset` (0 to MAX_OFFSET). A list with
    other bounds subclasses it and sets the two."""

    default_limit = 50
    max_limit = 200

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            "limit": _whole_number(
                "limit", 1, self.max_limit, f"rows on this page (1-{self.max_limit})", default=self.default_limit
            ),
            "offset": _whole_number("offset", 0, MAX_OFFSET, "rows to skip: the page starts after them", default=0),
        }


class LongListPage(PageInput):
    """Lists that answered every row before they paged (collections, readers, a document's versions): a first
    page as long as any tenant's list was, so a client that never pages still sees everything it saw."""

    default_limit = 1000
    max_limit = 1000


ARRAY_PAGE_NOTE = (
    "A page at a time (`limit`, `offset`): the answer is the page's rows; the `X-Total-Count` header counts them "
    'all and, while rows remain, `Link` gives the next page\'s address (rel="next").'
)


def page_of(request: Request, rows: QuerySet, output: type[serializers.Serializer], *,
            page: type[PageInput] = PageInput) -> Response:  # fmt: skip
    """The page the request asks for, as a page object: `count`, `limit`, `offset` and `results`."""
    limit, offset = page_bounds(request, page)
    return Response(
        {
            "count": rows.count(),
            "limit": limit,
            "offset": offset,
            "results": output(rows[offset : offset + limit], many=True).data,
        }
    )


def array_page_of(request: Request, rows: QuerySet | Sequence[Any], output: type[serializers.Serializer], *,
                  page: type[PageInput] = PageInput) -> Response:  # fmt: skip
    """The page the request asks for, as the JSON array a list has always answered; the total in `X-Total-Count`
    and the next page's address in `Link` while rows remain. `rows` may be a list a selector computed whole."""
    limit, offset = page_bounds(request, page)
    total = rows.count() if isinstance(rows, QuerySet) else len(rows)
    response = Response(output(rows[offset : offset + limit], many=True).data)
    response["X-Total-Count"] = str(total)
    if offset + limit < total and offset + limit <= MAX_OFFSET:
        query = request.query_params.copy()
        query["offset"], query["limit"] = str(offset + limit), str(limit)
        response["Link"] = f'<{request.build_absolute_uri(request.path)}?{query.urlencode()}>; rel="next"'
    return response


def page_bounds(request: Request, page: type[PageInput] = PageInput) -> tuple[int, int]:
    """(limit, offset) of the request's page input; a 400 naming the field when one cannot be used."""
    data = page(data=request.query_params)
    data.is_valid(raise_exception=True)
    return data.validated_data["limit"], data.validated_data["offset"]


def page_number_problem(name: str, value: str) -> str | None:
    """Why an admin page number cannot be used, or None: a whole number from 1 to MAX_OFFSET."""
    if value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_OFFSET:
        return None
    return f"{name} (the page number) must be a whole number from 1 to {MAX_OFFSET}"
