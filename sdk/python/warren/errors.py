"""The one error the SDK raises for anything the server (or the way to it) refused."""

import json
import re
from typing import Any, Optional

from ._codes import API_ERROR_CODES

# Codes the client gives itself: the server could not be reached or the connection closed
# mid-answer (network), no answer in time or a wait ran out (timeout), an answer that is not
# what the API says (response.invalid), a stream that ended early (stream.incomplete), and
# http.<status> for an error answer without the envelope.
CLIENT_ERROR_CODES = frozenset({"network", "timeout", "response.invalid", "stream.incomplete"})

__all__ = ["API_ERROR_CODES", "CLIENT_ERROR_CODES", "WarrenApiError"]


class WarrenApiError(Exception):
    """An error answer of the API, with its stable `code` (`not_found`, `access.denied`, ...),
    or the client's own (`network`, `timeout`, ...). `status` is the HTTP status, 0 when none
    applies (a network error, an error inside a stream, a client-side wait)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"WarrenApiError(status={self.status}, code={self.code!r}, message={self.message!r})"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def envelope_of(value: Any) -> Optional["tuple[str, str]"]:
    """`(code, message)` when `value` is the error envelope `{"error": {"code", "message"}}`."""
    if not isinstance(value, dict) or not isinstance(value.get("error"), dict):
        return None
    code = value["error"].get("code")
    message = value["error"].get("message")
    if not isinstance(code, str) or code == "":
        return None
    return code, message if isinstance(message, str) else code


def error_from_answer(status: int, reason: str, body: str) -> WarrenApiError:
    """The error of a non-2xx answer: the envelope's code and message, else `http.<status>`."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    env = envelope_of(parsed)
    if env is not None:
        return WarrenApiError(status, env[0], env[1])
    text = re.sub(r"\s+", " ", body).strip()[:200]
    why = reason or "the server answered without an error envelope"
    return WarrenApiError(status, f"http.{status}", f"{why}: {text}" if text else why)
