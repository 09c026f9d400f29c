"""Nothing an editor clicks answers a bare "Server Error (500)": with a populated tenant (tests/browser/populated.py:
documents, an imported copy, golden questions, an evaluation, a measure, searches), an editor of the tenant and a
superuser each follow every link reachable from the admin's index (lists, filters, change pages, tool pages, add
pages, downloads), GET only; nobody logs out and nothing is confirmed. Every page answers below 500.

The Django test client walks (about 700 pages per person, a minute or two), not Chromium: no page here needs a
script to show its links, and a 500 is a 500 to either. Query-string variants of one path are capped (a list's sort and
filter links multiply), so every kind of page is reached without walking every combination.
"""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client

from tests.browser.populated import ANSWERED, PASSWORD, populated_records, populated_tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Links that end the session or only post (a delete is confirmed by a POST nobody sends here).
SKIPPED = ("/admin/logout/",)
# Query-string variants of one path walked at most (sorting, filters, pages).
VARIANTS_PER_PATH = 6
# Pages walked at most per person: a guard against a loop of ever-new links, far above what the admin has.
MOST = 1500


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.found.append(href)


def _walk(client: Client, starts: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """Every admin page reachable from `starts`: {url: status}, and for each 500 where it was linked from."""
    seen: dict[str, int] = {}
    linked_from: dict[str, str] = {}
    variants: Counter[str] = Counter()
    queue = list(starts)
    while queue and len(seen) < MOST:
        url = queue.pop(0)
        if url in seen:
            continue
        response = client.get(url)
        seen[url] = response.status_code
        if response.status_code in (301, 302):
            queue.append(urljoin(url, response["Location"]))
            continue
        if getattr(response, "streaming", False):  # a download: its bytes are not a page
            response.close()
            continue
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        parser = _Links()
        parser.feed(response.content.decode(errors="replace"))
        for href in parser.found:
            target = urljoin(url, href.split("#")[0])
            parts = urlsplit(target)
            if parts.netloc not in ("", "testserver") or not parts.path.startswith("/admin/"):
                continue
            if parts.path.startswith(SKIPPED):
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if target in seen or target in queue:
                continue
            if parts.query:
                if variants[parts.path] >= VARIANTS_PER_PATH:
                    continue
                variants[parts.path] += 1
            linked_from.setdefault(target, url)
            queue.append(target)
    return seen, linked_from


@pytest.mark.parametrize("who", ["edna", "root"])
def test_no_admin_page_reachable_from_the_index_answers_500(who, tmp_path):
    tenant = populated_tenant(tmp_path)
    populated_records(tenant.tenant)
    client = Client(raise_request_exception=False)
    assert client.login(username=who, password=PASSWORD)
    # The pages a form leads to carry what was typed: a search on try-a-search, a preview with settings.
    starts = [
        "/admin/",
        f"/admin/retrieval/searchevent/try/{tenant.collection.pk}/?q={ANSWERED.replace(' ', '+')}",
        f"/admin/retrieval/searchevent/try/{tenant.imported.pk}/?q={ANSWERED.replace(' ', '+')}",
        f"/admin/collections_app/document/{tenant.handbook.pk}/preview/?strategy=structure&size=200&unit=chars&overlap=",
    ]
    seen, linked_from = _walk(client, starts)

    failed = {url: linked_from.get(url, "(start)") for url, status in seen.items() if status >= 500}
    assert not failed, f"{len(failed)} page(s) answered 500 (page <- linked from): {failed}"
    # The walk reached every kind of page, not just the index.
    paths = " ".join(seen)
    for reached in ("/change/", "/add/", "/reingest/", "/preview/", "/try/", "/download/", "/columns/", "/ocr/"):
        assert reached in paths, reached
    assert len(seen) > 100, len(seen)
