"""HTTP to one warren server on httpx, sync and async: URLs, headers, JSON, retries, streams, and
every failure turned into a WarrenApiError."""

import asyncio
import json as jsonlib
import random
import time
from typing import Any, AsyncIterator, Dict, Iterator, Mapping, Optional, Union
from urllib.parse import quote, urlsplit

import httpx

from ._streams import SseParser, StreamEvent, is_last, ndjson_value, stream_event_of
from .errors import WarrenApiError, error_from_answer

#: a call's timeout when it gives none: the client's
_DEFAULT: Any = object()
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: the server's own limit on a command when the request gives none, in seconds
_EXEC_DEFAULT_S = 60.0


def _seg(value: str) -> str:
    """One path segment (an id), encoded so that it cannot change the route."""
    if value in ("", ".", ".."):
        raise WarrenApiError(0, "request.invalid", f"{value!r} is not an id; give one such as agt_...")
    return quote(value, safe="")


def _home(path: str) -> str:
    """A home path for a files URL: segment by segment, or as one segment when it has `.` or `..`."""
    parts = path.split("/")
    if any(p in (".", "..") for p in parts):
        return quote(path, safe="")
    return "/".join(quote(p, safe="") for p in parts)


def backoff(attempt: int, retry_after: Optional[str] = None) -> float:
    """The pause (seconds) before try `attempt`: 0.25 s doubling up to 4 s with jitter, or Retry-After up to 10 s."""
    if retry_after is not None and retry_after.strip().isdigit():
        return min(float(retry_after.strip()), 10.0)
    base = min(4.0, 0.25 * 2 ** (attempt - 1))
    return base / 2 + random.random() * base / 2


class _Base:
    def __init__(
        self,
        base_url: str,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = 60.0,
        retries: int = 2,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http:// or https:// URL such as http://127.0.0.1:8080, not {base_url!r}")
        if retries < 0 or (timeout is not None and timeout < 0):
            raise ValueError("retries and timeout must be 0 or more")
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.retries = retries

    def _request(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]],
        json: Any,
        data: Union[bytes, str, None],
        accept: str,
        headers: Optional[Mapping[str, str]],
    ) -> "tuple[str, Dict[str, str], Dict[str, str], Optional[bytes]]":
        h = {"accept": accept, **self.headers, **(headers or {})}
        content: Optional[bytes] = None
        if json is not None:
            h["content-type"] = "application/json"
            content = jsonlib.dumps(json).encode("utf-8")
        elif data is not None:
            h["content-type"] = "application/octet-stream"
            content = data.encode("utf-8") if isinstance(data, str) else data
        params: Dict[str, str] = {}
        for k, v in (query or {}).items():
            if v is None:
                continue
            params[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        return self.base_url + path, params, h, content

    def _timeout(self, method: str, path: str, json: Any, timeout: Any) -> Optional[float]:
        if timeout is not _DEFAULT:
            return timeout  # type: ignore[no-any-return]
        if self.timeout and method == "POST" and path.endswith("/exec") and isinstance(json, dict):
            # a buffered exec answers once the command ended: its own limit and more
            ms = json.get("timeout_ms")
            return max(self.timeout, (ms / 1000 if isinstance(ms, (int, float)) else _EXEC_DEFAULT_S) + 30)
        return self.timeout

    def _failure(self, method: str, path: str, err: Exception, timeout: Optional[float]) -> WarrenApiError:
        if isinstance(err, httpx.TimeoutException):
            return WarrenApiError(0, "timeout", f"{method} {path} had no answer from {self.base_url} within {timeout} s")
        return WarrenApiError(
            0, "network", f"could not reach {self.base_url} ({type(err).__name__}: {err}); is `warren serve` running there?"
        )


def _parse_json(method: str, path: str, res: httpx.Response) -> Any:
    try:
        return jsonlib.loads(res.content)
    except ValueError:
        raise WarrenApiError(res.status_code, "response.invalid", f"{method} {path} answered something that is not JSON") from None


class SyncTransport(_Base):
    def __init__(self, *args: Any, http_client: Optional[httpx.Client] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._own = http_client is None
        self.client = http_client or httpx.Client()

    def close(self) -> None:
        if self._own:
            self.client.close()

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        json: Any = None,
        data: Union[bytes, str, None] = None,
        accept: str = "application/json",
        headers: Optional[Mapping[str, str]] = None,
        timeout: Any = _DEFAULT,
        stream: bool = False,
    ) -> httpx.Response:
        """Sends a request; answers the response when it is 2xx, raises a WarrenApiError otherwise.
        An idempotent call is tried again after a connection error or a 503."""
        url, params, h, content = self._request(method, path, query, json, data, accept, headers)
        wait = self._timeout(method, path, json, timeout)
        tries = self.retries + 1 if method in _IDEMPOTENT else 1
        attempt = 0
        while True:
            attempt += 1
            req = self.client.build_request(
                method, url, params=params, headers=h, content=content, timeout=httpx.Timeout(wait)
            )
            try:
                res = self.client.send(req, stream=stream)
            except httpx.TransportError as err:
                if isinstance(err, httpx.TimeoutException) or attempt >= tries:
                    raise self._failure(method, path, err, wait) from err
                time.sleep(backoff(attempt))
                continue
            if res.is_success:
                return res
            if res.status_code == 503 and attempt < tries:
                res.close()
                time.sleep(backoff(attempt, res.headers.get("retry-after")))
                continue
            try:
                body = res.read().decode("utf-8", "replace")
            except httpx.HTTPError:
                body = ""
            finally:
                res.close()
            raise error_from_answer(res.status_code, res.reason_phrase, body)

    def json(self, method: str, path: str, **kw: Any) -> Any:
        return _parse_json(method, path, self.send(method, path, **kw))

    def bytes(self, method: str, path: str, **kw: Any) -> bytes:
        return self.send(method, path, accept="*/*", **kw).content

    def text(self, method: str, path: str, **kw: Any) -> str:
        return self.send(method, path, accept="*/*", **kw).text

    def empty(self, method: str, path: str, **kw: Any) -> None:
        self.send(method, path, **kw)

    def ndjson(self, method: str, path: str, **kw: Any) -> Iterator[Any]:
        """Each line of a streamed answer, parsed; leaving the loop early closes the request."""
        kw.setdefault("timeout", None)
        res = self.send(method, path, accept="application/x-ndjson", stream=True, **kw)
        ended = False
        try:
            for line in res.iter_lines():
                value = ndjson_value(line)
                if value is None:
                    continue
                ended = is_last(value)
                yield value
        except httpx.TransportError as err:
            raise WarrenApiError(0, "network", f"the connection closed in the middle of the answer ({err})") from err
        finally:
            res.close()
        if not ended:
            raise WarrenApiError(0, "stream.incomplete", "the stream ended before its last line; the server may have stopped")

    def sse(
        self,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        after: Optional[str] = None,
        reconnects: int = 8,
        timeout: Optional[float] = None,
        ends_after: Optional[str] = None,
    ) -> Iterator[StreamEvent]:
        """The events at `path`, each once and in order; a dropped connection is opened again with
        Last-Event-ID after the last event seen. A 204 ends it; so does the server's close once an
        `ends_after` event was seen."""
        last, failures, retry_s, over = after, 0, None, False
        while True:
            cause: Optional[BaseException] = None
            try:
                res = self.send(
                    "GET",
                    path,
                    query=query,
                    accept="text/event-stream",
                    headers={"last-event-id": last} if last else None,
                    timeout=timeout,
                    stream=True,
                )
                try:
                    if res.status_code == 204:
                        return
                    parser = SseParser()
                    for line in res.iter_lines():
                        message = parser.line(line)
                        if message is None:
                            continue
                        if message.retry is not None:
                            retry_s = message.retry / 1000
                        if message.event == "error":
                            cause = WarrenApiError(0, "network", f"the server ended the stream: {message.data[:200]}")
                            break
                        event = stream_event_of(message)
                        if event.id:
                            last = event.id
                        failures = 0
                        over = over or event.type == ends_after
                        yield event
                finally:
                    res.close()
                if cause is None:
                    if over:
                        return
                    failures = 0
            except WarrenApiError as err:
                if err.status not in (0, 503) or err.code == "response.invalid":
                    raise
                cause = err
            except httpx.TransportError as err:
                cause = err
            failures += 1
            if failures > reconnects:
                raise WarrenApiError(
                    0, "network", f"the event stream {path} dropped {failures} times in a row; is the server still running?"
                ) from cause
            time.sleep(retry_s if retry_s is not None else min(4.0, 0.1 * 2 ** (failures - 1)))


class AsyncTransport(_Base):
    def __init__(self, *args: Any, http_client: Optional[httpx.AsyncClient] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._own = http_client is None
        self.client = http_client or httpx.AsyncClient()

    async def close(self) -> None:
        if self._own:
            await self.client.aclose()

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        json: Any = None,
        data: Union[bytes, str, None] = None,
        accept: str = "application/json",
        headers: Optional[Mapping[str, str]] = None,
        timeout: Any = _DEFAULT,
        stream: bool = False,
    ) -> httpx.Response:
        url, params, h, content = self._request(method, path, query, json, data, accept, headers)
        wait = self._timeout(method, path, json, timeout)
        tries = self.retries + 1 if method in _IDEMPOTENT else 1
        attempt = 0
        while True:
            attempt += 1
            req = self.client.build_request(
                method, url, params=params, headers=h, content=content, timeout=httpx.Timeout(wait)
            )
            try:
                res = await self.client.send(req, stream=stream)
            except httpx.TransportError as err:
                if isinstance(err, httpx.TimeoutException) or attempt >= tries:
                    raise self._failure(method, path, err, wait) from err
                await asyncio.sleep(backoff(attempt))
                continue
            if res.is_success:
                return res
            if res.status_code == 503 and attempt < tries:
                await res.aclose()
                await asyncio.sleep(backoff(attempt, res.headers.get("retry-after")))
                continue
            try:
                body = (await res.aread()).decode("utf-8", "replace")
            except httpx.HTTPError:
                body = ""
            finally:
                await res.aclose()
            raise error_from_answer(res.status_code, res.reason_phrase, body)

    async def json(self, method: str, path: str, **kw: Any) -> Any:
        return _parse_json(method, path, await self.send(method, path, **kw))

    async def bytes(self, method: str, path: str, **kw: Any) -> bytes:
        return (await self.send(method, path, accept="*/*", **kw)).content

    async def text(self, method: str, path: str, **kw: Any) -> str:
        return (await self.send(method, path, accept="*/*", **kw)).text

    async def empty(self, method: str, path: str, **kw: Any) -> None:
        await self.send(method, path, **kw)

    async def ndjson(self, method: str, path: str, **kw: Any) -> AsyncIterator[Any]:
        kw.setdefault("timeout", None)
        res = await self.send(method, path, accept="application/x-ndjson", stream=True, **kw)
        ended = False
        try:
            async for line in res.aiter_lines():
                value = ndjson_value(line)
                if value is None:
                    continue
                ended = is_last(value)
                yield value
        except httpx.TransportError as err:
            raise WarrenApiError(0, "network", f"the connection closed in the middle of the answer ({err})") from err
        finally:
            await res.aclose()
        if not ended:
            raise WarrenApiError(0, "stream.incomplete", "the stream ended before its last line; the server may have stopped")

    async def sse(
        self,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        after: Optional[str] = None,
        reconnects: int = 8,
        timeout: Optional[float] = None,
        ends_after: Optional[str] = None,
    ) -> AsyncIterator[StreamEvent]:
        last, failures, retry_s, over = after, 0, None, False
        while True:
            cause: Optional[BaseException] = None
            try:
                res = await self.send(
                    "GET",
                    path,
                    query=query,
                    accept="text/event-stream",
                    headers={"last-event-id": last} if last else None,
                    timeout=timeout,
                    stream=True,
                )
                try:
                    if res.status_code == 204:
                        return
                    parser = SseParser()
                    async for line in res.aiter_lines():
                        message = parser.line(line)
                        if message is None:
                            continue
                        if message.retry is not None:
                            retry_s = message.retry / 1000
                        if message.event == "error":
                            cause = WarrenApiError(0, "network", f"the server ended the stream: {message.data[:200]}")
                            break
                        event = stream_event_of(message)
                        if event.id:
                            last = event.id
                        failures = 0
                        over = over or event.type == ends_after
                        yield event
                finally:
                    await res.aclose()
                if cause is None:
                    if over:
                        return
                    failures = 0
            except WarrenApiError as err:
                if err.status not in (0, 503) or err.code == "response.invalid":
                    raise
                cause = err
            except httpx.TransportError as err:
                cause = err
            failures += 1
            if failures > reconnects:
                raise WarrenApiError(
                    0, "network", f"the event stream {path} dropped {failures} times in a row; is the server still running?"
                ) from cause
            await asyncio.sleep(retry_s if retry_s is not None else min(4.0, 0.1 * 2 ** (failures - 1)))
