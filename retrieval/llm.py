"""A client for the optional generative model behind KB_LLM_URL, speaking OpenAI's chat protocol.

    reply = chat(messages=[{"role": "user", "content": "..."}])
    reply.text, reply.tokens_in, reply.tokens_out, reply.ms

Messages in, text and usage out: the judge, the query planner and translation all call it. Every failure
raises `LLMFailed` (a timeout `LLMTimeout`) with a message fit for a search trace: it names what went wrong,
never the prompt, the answer or the endpoint's address (which may carry a key).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

CHAT_PATH = "/chat/completions"
_client: httpx.Client | None = None


class LLMFailed(Exception):
    """The chat endpoint did not answer usefully; the message says why (for a trace)."""


class LLMTimeout(LLMFailed):
    """The chat endpoint did not answer within the timeout."""


class LLMNotConfigured(LLMFailed):
    """KB_LLM_URL is not set: there is no model to ask."""


@dataclass(frozen=True)
class ChatReply:
    text: str
    model: str  # what the endpoint said it served, else what was asked for
    tokens_in: int | None  # None: the endpoint reported no usage
    tokens_out: int | None
    ms: float


def llm_configured() -> bool:
    return bool(settings.KB_LLM_URL)


def chat_url(base: str) -> str:
    """KB_LLM_URL may be the API's base (http://host/v1) or the full chat address."""
    base = base.rstrip("/")
    return base if base.endswith(CHAT_PATH) else base + CHAT_PATH


# A reply that restates the question (a translation, sub-questions, a step-back question) is about as long as it.
# Two tokens a character leaves room for a script that a small vocabulary spells byte by byte, and 64 for the
# reply's frame (JSON, quotes). Without a bound, a model that keeps writing holds the search until
# KB_LLM_TIMEOUT: bench/judge.py measured a small model doing so on 124 of 142 translations.
REPLY_FRAME_TOKENS = 64


def restating_reply_tokens(text: str, *, copies: int = 1) -> int:
    """The max_tokens of a chat call whose answer restates `text` up to `copies` times."""
    return REPLY_FRAME_TOKENS + 2 * copies * len(text)


def chat(
    *,
    messages: list[dict[str, str]],
    model: str | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
    temperature: float = 0.0,
) -> ChatReply:
    """One chat completion. Raises LLMNotConfigured, LLMTimeout or LLMFailed."""
    if not settings.KB_LLM_URL:
        raise LLMNotConfigured("no KB_LLM_URL configured")
    model = model or settings.KB_LLM_MODEL
    timeout = timeout if timeout is not None else settings.KB_LLM_TIMEOUT
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    headers = {"Authorization": f"Bearer {settings.KB_LLM_API_KEY}"} if settings.KB_LLM_API_KEY else {}
    started = time.perf_counter()
    try:
        response = _http().post(chat_url(settings.KB_LLM_URL), json=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise LLMTimeout(f"the chat model did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise LLMFailed(f"the chat model could not be reached ({type(exc).__name__})") from None
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise LLMFailed(f"the chat model answered HTTP {response.status_code}")
    try:
        answer = response.json()
        text = answer["choices"][0]["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("content is not text")
        usage = answer.get("usage") or {}
        return ChatReply(
            text=text,
            model=str(answer.get("model") or model),
            tokens_in=_count(usage.get("prompt_tokens")),
            tokens_out=_count(usage.get("completion_tokens")),
            ms=ms,
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise LLMFailed("the chat model's answer is not a chat completion") from None


def _http() -> httpx.Client:
    # One client per process: it keeps connections open between searches, and building one (its TLS context)
    # costs more than a local model's answer. httpx clients are safe to share between threads.
    global _client
    if _client is None:
        _client = httpx.Client()
    return _client


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None
