"""An API address nothing answers is a JSON 404, as every other refusal."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "path",
    [
        "/api/manage/collections/not-a-uuid",
        "/api/manage/readers/%C2%A9",
        "/api/nothing-here",
        "/api/manage/",
        # A newline in an id (what schemathesis sent): "." in the catch-all's pattern did not match it.
        "/api/manage/collections/d2573bbc-d4bf-4214-8050-05ead6253f3d/golden/m%0A%C3%B3",
        "/api/manage/collections/d2573bbc-d4bf-4214-8050-05ead6253f3d/measure/%C3%8C%0A%C3%87%0FB/apply",
    ],
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
