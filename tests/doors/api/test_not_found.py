"""An API address nothing answers is a JSON 404, as every other refusal."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "path", ["/api/manage/collections/not-a-uuid", "/api/manage/readers/%C2%A9", "/api/nothing-here", "/api/manage/"]
)
def test_an_unknown_api_address_is_a_json_404(cast, path) -> None:
    response = cast.viewer.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and "/api/docs/" in response.json()["detail"]


def test_a_write_to_an_unknown_api_address_is_a_json_404_too(cast) -> None:
    response = cast.editor.patch("/api/manage/readers/not-a-uuid", {"name": "x"}, format="json")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"


def test_pages_outside_the_api_keep_their_own_404(client) -> None:
    assert client.get("/no-such-page").status_code == 404
    assert client.get("/no-such-page")["Content-Type"].startswith("text/html")
