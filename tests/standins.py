"""Stand-ins for the model endpoints kbsite calls, speaking their protocols over real local HTTP.

    with serve(chat=lambda request: "yes", rerank=lambda request: [0.9] * len(request.body["texts"])) as server:
        settings.KB_LLM_URL = server.url + "/v1"
        settings.KB_RERANK_URL = server.url + "/rerank"
        ...
    server.requests  # every request, in order: path, JSON body, headers

One server on a free local port, in a thread, for as long as the `with` lasts. It answers a POST by the end of
its path, with the function the test gave for that protocol (a canned reply is a lambda; a function of the
request can read what was asked, and the test's own state):

- OpenAI-compatible chat, `.../chat/completions`: `chat(request)` returns the assistant's text; the answer is a
  chat completion naming the model asked for and reporting `usage` (prompt, completion tokens).
- `/rerank` (text-embeddings-inference's protocol): `rerank(request)` returns one score per text of
  `request.body["texts"]`; the answer lists {"index", "score"}.
- OpenAI-compatible embeddings, `.../embeddings`: `embeddings(request)` returns one vector per text of
  `request.body["input"]`; the answer lists them last first, with their index (a client must sort them).

Any of them may return a `Reply` instead, sent as it is: another status (`Reply(status=503)`: a failing
endpoint) or a body of the test's own. `Late(result, seconds)` sends the answer to `result` that much later
(a timeout: the client gives up first). A path no function serves is a 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    """One POST the stand-in received."""

    path: str
    body: Any
    headers: dict[str, str]  # names in lower case

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    @property
    def system(self) -> str:
        """A chat request's first (system) message."""
        return self.body["messages"][0]["content"]

    @property
    def user(self) -> str:
        """A chat request's last (user) message."""
        return self.body["messages"][-1]["content"]


@dataclass(frozen=True)
class Reply:
    """An answer other than the protocol's plain success: `body` is sent as JSON as it is (None: no body)."""

    body: Any = None
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering


@dataclass(frozen=True)
class Late:
    """The answer to `result` (what the function would have returned), sent `seconds` late."""

    result: Any
    seconds: float


Answer = Callable[[Request], Any]


@dataclass
class StandIn:
    url: str = ""  # http://127.0.0.1:<port>, no trailing slash
    requests: list[Request] = field(default_factory=list)


def chat_completion(content: str, *, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
    }


@contextmanager
def serve(
    *,
    chat: Answer | None = None,
    rerank: Answer | None = None,
    embeddings: Answer | None = None,
    usage: tuple[int, int] = (40, 12),
    model: str = "stand-in-model",  # the chat completion's model when the request names none
) -> Iterator[StandIn]:
    """A local server speaking the protocols given a function; see the module's docstring."""
    stand_in = StandIn()

    def completion(request: Request, text: str) -> dict[str, Any]:
        return chat_completion(text, model=request.body["model"] or model, usage=usage)

    def ranking(request: Request, scores: list[float]) -> list[dict[str, Any]]:
        return [{"index": i, "score": score} for i, score in enumerate(scores)]

    def embedded(request: Request, vectors: list[list[float]]) -> dict[str, Any]:
        data = [{"index": i, "embedding": vector} for i, vector in enumerate(vectors)]
        return {"data": data[::-1], "model": request.body["model"]}

    routes: list[tuple[str, Answer | None, Callable[[Request, Any], Any]]] = [
        ("/chat/completions", chat, completion),
        ("/rerank", rerank, ranking),
        ("/embeddings", embeddings, embedded),
    ]

    def answer(request: Request) -> Reply:
        for suffix, function, shape in routes:
            if function is not None and request.path.endswith(suffix):
                return _protocol(request, function(request), shape)
        return Reply(status=404)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = Request(self.path, body, {k.lower(): v for k, v in self.headers.items()})
            stand_in.requests.append(request)
            reply = answer(request)
            time.sleep(reply.delay)
            payload = b"" if reply.body is None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                if payload:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up waiting (a timeout test)

        def log_message(self, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stand_in.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()


class _Server(ThreadingHTTPServer):
    block_on_close = False  # a delayed answer the client gave up on does not hold up the test's teardown


def _protocol(request: Request, result: Any, shape: Callable[[Request, Any], Any]) -> Reply:
    """A function's result as the protocol's answer: a Reply passes as it is, anything else is shaped."""
    if isinstance(result, Late):
        return replace(_protocol(request, result.result, shape), delay=result.seconds)
    if isinstance(result, Reply):
        return result
    return Reply(shape(request, result))
