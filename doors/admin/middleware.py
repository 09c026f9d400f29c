"""The admin answers bad input in its URLs and forms with a 400, never a 500.

A changelist filter, a date drill-down, a page number or an action's selected ids come straight from the query string or
the form: NUL or a lone surrogate in any of them, a year PostgreSQL cannot hold, or an id that is not of
the model's key type would otherwise reach the database or a field's parser and crash the page. One
middleware covers every admin page — the tenant-scoped ones and the superuser-only pages of django-q2 and
auth alike — so a new admin class cannot forget it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import DataError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.urls import reverse
from django.utils.html import escape

from doors.api.pages import page_number_problem
from infra.validation import text_problem

logger = logging.getLogger(__name__)

# Date drill-down parts (`created_at__year=`) and the values the database and `datetime` accept.
DATE_PARTS = {"__year": (1, 9999), "__month": (1, 12), "__day": (1, 31)}
# Page numbers: a changelist's (Django's PAGE_VAR) and the admin's own paged lists' (a document's paragraphs).
PAGE_NUMBERS = ("p", "page")
# What a value parsed by a model field or the database raises when it cannot be used; OverflowError: a
# number too large for its column.
BAD_VALUE_ERRORS = (ValueError, OverflowError, ValidationError, DataError)


def admin_input_problem(request: HttpRequest) -> str | None:
    """Why a value of this request's query string or form cannot be used, or None."""
    for source in (request.GET, request.POST):
        for name, values in source.lists():
            for value in [name, *values]:
                problem = text_problem(value)
                if problem:
                    return f"a value in this page's address or form {problem}"
            for suffix, (low, high) in DATE_PARTS.items():
                if name.endswith(suffix) and not all(_int_within(value, low, high) for value in values):
                    return f"{name} must be a whole number from {low} to {high}"
    for name in PAGE_NUMBERS:
        for value in request.GET.getlist(name):
            problem = page_number_problem(name, value)
            if problem:
                return problem
    return None


def _int_within(value: str, low: int, high: int) -> bool:
    return value.strip().isdigit() and low <= int(value) <= high


def _bad_request(why: str) -> HttpResponse:
    return HttpResponseBadRequest(f"<h1>Bad request</h1><p>{escape(why)}. Go back and try again.</p>")


class AdminBadInputMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.prefix = ""

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._is_admin(request):
            problem = admin_input_problem(request)
            if problem:
                return _bad_request(problem)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # The backstop: a value that passed the checks above and still could not be parsed (an id of the
        # wrong type among an action's selected rows, say). Logged by kind only: the value may be anything.
        if not self._is_admin(request) or not isinstance(exception, BAD_VALUE_ERRORS):
            return None
        logger.warning("admin %s answered 400: %s", request.path, type(exception).__name__)
        return _bad_request("a value in this page's address or form is not one this page can use")

    def _is_admin(self, request: HttpRequest) -> bool:
        if not self.prefix:
            self.prefix = reverse("admin:index")
        return request.path.startswith(self.prefix)
