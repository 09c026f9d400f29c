"""The one lookup every management door makes of the collection in its URL."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework.request import Request

from collections_app import selectors
from collections_app.models import Collection
from doors.api.authentication import request_key


def collection_or_404(request: Request, collection_id: object) -> Collection:
    """The collection the URL names, as the key reaches it (collections_for_key, the one scope rule): another
    tenant's id, or a collection outside an agent key's set, is simply not found (404, never 403)."""
    return get_object_or_404(selectors.collections_for_key(request_key(request)), pk=collection_id)
