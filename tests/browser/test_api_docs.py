"""The API documentation renders every endpoint in a browser with no network beyond the server itself."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _documented_operations() -> set[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }


def test_swagger_ui_lists_every_operation_offline(offline_page, live_server, screenshot) -> None:
    page = offline_page
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)
    rendered = {
        (block.query_selector(".opblock-summary-method").inner_text().strip(),
         block.query_selector(".opblock-summary-path").get_attribute("data-path"))
        for block in page.query_selector_all(".opblock")
    }  # fmt: skip
    screenshot(page, "api-docs-swagger")
    assert page.outside_requests == []
    expected = _documented_operations()
    assert len(expected) >= 5
    assert expected <= rendered, f"not rendered: {sorted(expected - rendered)}"


def test_redoc_renders_offline(offline_page, live_server, screenshot) -> None:
    page = offline_page
    page.goto(f"{live_server.url}/api/redoc/")
    page.wait_for_selector("text=kbsite API", timeout=20_000)
    page.wait_for_selector("[data-section-id]", timeout=20_000)
    # The search's answer is shown as a real one (not the generated "string" skeleton), its fields described.
    page.wait_for_selector("text=Carrying over", state="attached", timeout=20_000)
    assert page.locator("text=Neighbouring paragraphs stitched to each side").count() >= 1
    screenshot(page, "api-docs-redoc")
    # Redoc's bundle links its maker's logo from a CDN in the sidebar footer and hides it when it fails to
    # load: a decoration, not part of the documentation. Anything else from outside fails the test.
    assert [u for u in page.outside_requests if not u.endswith("/redoc/logo-mini.svg")] == []


def test_front_page_links_admin_and_docs_and_has_an_icon(offline_page, live_server) -> None:
    page = offline_page
    icon = page.request.get(f"{live_server.url}/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"
    page.goto(f"{live_server.url}/")
    links = {a.get_attribute("href") for a in page.query_selector_all("a")}
    assert {"/admin/", "/api/docs/", "/api/schema/"} <= links
    page.goto(f"{live_server.url}/admin/login/")
    assert "kbsite" in page.title()
    assert page.outside_requests == []
