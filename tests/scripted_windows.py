"""The errors real model servers send when a prompt does not fit their window.

Used by ``tests.scripted_server`` when it enforces a window, so the client meets each dialect
byte for byte as the servers write it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.scripted_responses import responses_failed_events

STYLES = ("openai", "anthropic", "responses", "vllm", "llamacpp", "ollama")

RESPONSES_TOO_LONG = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)
"""The Responses API's words for a full window: no limit in them (openai/codex #20866, #19269)."""


def context_error(style: str, api: str, tokens: int, window: int) -> dict[str, Any]:
    """The 400 body each server sends when the prompt does not fit, as they send it:

    - OpenAI (``code: context_length_exceeded``) and Anthropic (``prompt is too long``): the
      APIs' documented error objects.
    - The Responses API: the same ``code``, ``param: "input"`` and a message that states no
      limit, as quoted from the API in openai/codex #20866. (On a streamed request the API
      says it in a ``response.failed`` event instead: ``tests.scripted_responses``.)
    - vLLM: ``{"object": "error", …, "type": "BadRequestError"}`` (vllm-project/vllm #20409).
    - llama.cpp server: ``exceed_context_size_error`` with ``n_ctx`` (ggml-org/llama.cpp
      PR #15780, issue #19774).
    - Ollama: ``{"error": "the input length exceeds the context length"}`` — no limit stated.
    """
    if style == "auto":
        style = api
    if style == "responses":
        return {
            "error": {
                "message": RESPONSES_TOO_LONG,
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        }
    if style == "anthropic":
        message = f"prompt is too long: {tokens} tokens > {window} maximum"
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    if style == "vllm":
        return {
            "object": "error",
            "message": f"This model's maximum context length is {window} tokens. However, you "
            f"requested {tokens + 1024} tokens ({tokens} in the messages, 1024 in the "
            "completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    if style == "llamacpp":
        return {
            "error": {
                "code": 400,
                "message": f"request ({tokens} tokens) exceeds the available context size "
                f"({window} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": window,
            }
        }
    if style == "ollama":
        return {"error": "the input length exceeds the context length"}
    return {
        "error": {
            "message": f"This model's maximum context length is {window} tokens. However, your "
            f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def refusal(
    style: str,
    api: str,
    request: dict[str, Any],
    tokens: int,
    window: int,
    *,
    new_id: Callable[[str], str],
    sse: Callable[..., bytes],
) -> tuple[str, dict[str, Any] | list[bytes]]:
    """How the server says "too long": ``("400", body)``, or, for a streamed request to the
    Responses API, ``("response.failed", events)``: a 200 stream that fails, as OpenAI sends
    it (see ``responses_failed_events``)."""
    if not (api == "responses" and style == "auto" and request.get("stream") is True):
        return "400", context_error(style, api, tokens, window)
    error = context_error("responses", api, tokens, window)["error"]
    events = responses_failed_events(
        {"code": error["code"], "message": error["message"]},
        model=str(request.get("model") or "scripted-model"),
        response_id=new_id("resp_scripted"),
        request=request,
        sse=sse,
    )
    return "response.failed", events
