"""The front door: a small landing page and the favicon; everything else lives under /admin/ and /api/."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

# One small mark for the browser tab, inline so it needs no static file server.
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#264b5d"/>'
    '<text x="16" y="22" font-family="sans-serif" font-size="15" font-weight="bold" '
    'text-anchor="middle" fill="#fff">kb</text></svg>'
)


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "kbsite/home.html")


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    return HttpResponse(FAVICON_SVG, content_type="image/svg+xml")


@csrf_exempt  # the API answers tokens, not cookies: a 404 must not become a CSRF page for a PATCH
def api_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Any /api/ address no endpoint answers: a JSON 404 like every other API refusal, never an HTML page.

    It also catches ids that are not UUIDs (/api/manage/collections/abc), which no route matches.
    """
    return JsonResponse({"detail": "Not found: no API endpoint at this address (see /api/docs/)."}, status=404)
