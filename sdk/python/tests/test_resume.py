"""The clients' event streams over real HTTP against a small server on loopback that ends the
answer in the middle of a run: the stream opens again with Last-Event-ID and gives every event
once, in order, and ends after the run's exit; an error answer is the API's code, not tried again."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from warren import AsyncClient, Client, WarrenApiError

EVENTS = [(1, "started"), (2, "output"), (3, "exit")]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.seen.append((self.path, self.headers.get("last-event-id")))
        if self.path.startswith("/api/runs/run_refused"):
            body = json.dumps({"error": {"code": "access.denied", "message": "not yours"}}).encode()
            self.send_response(403)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        after = int(self.headers.get("last-event-id") or 0)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"retry: 10\n\n")
        # the first answer ends after two events, before the exit; the next one gives the rest
        for id, kind in [e for e in EVENTS if e[0] > after][: 2 if after == 0 else None]:
            data = json.dumps({"id": id, "type": kind, "at": "t", "data": {"n": id}})
            self.wfile.write(f"id: {id}\nevent: {kind}\ndata: {data}\n\n".encode())
        self.wfile.flush()


@pytest.fixture()
def server():
    Handler.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_sync_stream_resumes_after_an_ended_answer(server):
    with Client(server) as c:
        events = list(c.runs.events_stream("run_a"))
    assert [(e.id, e.type, e.data) for e in events] == [("1", "started", {"n": 1}), ("2", "output", {"n": 2}), ("3", "exit", {"n": 3})]
    assert Handler.seen == [("/api/runs/run_a/events", None), ("/api/runs/run_a/events", "2")]


def test_async_stream_resumes_after_an_ended_answer(server):
    async def read():
        async with AsyncClient(server) as c:
            return [e async for e in c.runs.events_stream("run_a", after="1")]

    events = asyncio.run(read())
    assert [e.id for e in events] == ["2", "3"]
    assert Handler.seen == [("/api/runs/run_a/events", "1")]


def test_an_error_answer_carries_the_code_and_is_not_retried(server):
    with Client(server) as c:
        with pytest.raises(WarrenApiError) as err:
            list(c.runs.events_stream("run_refused"))
    assert (err.value.status, err.value.code, err.value.message) == (403, "access.denied", "not yours")
    assert len(Handler.seen) == 1
