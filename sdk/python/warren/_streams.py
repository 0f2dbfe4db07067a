"""The two stream formats of the API: newline-delimited JSON (a streamed exec) and server-sent
events (a run's or a conversation's events), parsed line by line for both clients."""

import json
from dataclasses import dataclass
from typing import Any, Optional

from .errors import WarrenApiError, envelope_of


@dataclass
class StreamEvent:
    """One event of a stream: its id (what resumes after it), its type, and what it says."""

    #: given back as `after` (Last-Event-ID) to resume after this event
    id: str
    #: `message`, `output`, `model_call`, `tool_call`, `approval`, `exit`, ...
    type: str
    #: when it happened, when the server said
    at: Optional[str]
    #: the run (a conversation's turn) it belongs to, when the server said
    run_id: Optional[str]
    data: Any


@dataclass
class SseMessage:
    """One message of the wire format, as the server wrote it."""

    id: Optional[str]
    event: str
    data: str
    retry: Optional[int]


class SseParser:
    """Feeds lines (without their ends) of an event stream; answers each complete message."""

    def __init__(self) -> None:
        self._data: "list[str]" = []
        self._event = ""
        self._id: Optional[str] = None
        self._retry: Optional[int] = None

    def line(self, line: str) -> Optional[SseMessage]:
        # a line as httpx gives it: with its end (older versions) or without
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        if line == "":
            message = None
            if self._data:
                message = SseMessage(self._id, self._event or "message", "\n".join(self._data), self._retry)
            self._data, self._event, self._retry = [], "", None
            return message
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None


def stream_event_of(message: SseMessage) -> StreamEvent:
    """The event a message carries: its JSON data, with the message's type and id when it lacks them."""
    try:
        parsed = json.loads(message.data)
    except ValueError:
        raise WarrenApiError(0, "response.invalid", f"an event's data is not JSON: {message.data[:120]}") from None
    o = parsed if isinstance(parsed, dict) else {}

    def text(v: Any) -> Optional[str]:
        if isinstance(v, bool):
            return None
        return v if isinstance(v, str) else str(v) if isinstance(v, (int, float)) else None

    whole = isinstance(o.get("type"), str) and "data" in o
    return StreamEvent(
        id=message.id if message.id is not None else text(o.get("id")) or "",
        type=o["type"] if whole else message.event,
        at=text(o.get("at")),
        run_id=text(o.get("run_id")),
        data=o["data"] if whole else parsed,
    )


def ndjson_value(line: str) -> Any:
    """One streamed line parsed (None for a blank line); an error the server reported mid-stream is raised."""
    text = line.strip()
    if text == "":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise WarrenApiError(0, "response.invalid", f"a streamed line is not JSON: {text[:120]}") from None
    env = envelope_of(value)
    if env is not None:
        raise WarrenApiError(0, env[0], env[1])
    return value


def is_last(value: Any) -> bool:
    """True for the last line of a streamed exec: its exit."""
    return isinstance(value, dict) and "exit_code" in value and "stream" not in value
