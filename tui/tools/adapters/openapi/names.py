"""Names a provider accepts, made from what a spec calls things.

Tool names and argument names must match ``[A-Za-z0-9_.-]`` and stay within 64 characters, and
two operations (or two parameters) must never end up with the same one; the spec promises
none of that, so every name an OpenAPI tool shows the model is made here.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

MAX_NAME = 64
MAX_PROPERTY_NAME = 64


def sanitize(text: str) -> str:
    """``text`` with runs of unaccepted characters as one ``_``, and no ``_`` at either end."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", text)
    return re.sub(r"_{2,}", "_", cleaned).strip("_")


def sanitize_property(name: str) -> str:
    """Providers accept argument names matching ``[A-Za-z0-9_.-]{1,64}``."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
    return cleaned or "param"


def fit(name: str, limit: int) -> str:
    """``name`` within ``limit`` characters; a cut name ends in a digest of the whole."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9]}_{digest}"


def unique_name(name: str, taken: set[str], limit: int) -> str:
    """``name`` fitted to ``limit`` and numbered until it is not in ``taken`` (then added)."""
    candidate = fit(name, limit)
    number = 2
    while candidate in taken:
        suffix = f"_{number}"
        candidate = fit(name, limit - len(suffix)) + suffix
        number += 1
    taken.add(candidate)
    return candidate


def operation_suffix(method: str, path: str, operation_id: Any) -> str:
    """The part of a tool name after ``{api}__``: the operationId, else method and path."""
    if isinstance(operation_id, str) and sanitize(operation_id):
        return sanitize(operation_id)
    return sanitize(f"{method}_{path.replace('{', '').replace('}', '')}") or method
