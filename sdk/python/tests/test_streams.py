"""The SDK's parsing without a server: server-sent events, NDJSON lines, error answers, and the
path encoding that keeps an id from changing the route."""

import pytest

from warren import WarrenApiError
from warren._streams import SseParser, ndjson_value, stream_event_of
from warren._transport import _home, _seg
from warren.errors import error_from_answer


def messages(text):
    parser, out = SseParser(), []
    for line in text.splitlines():
        m = parser.line(line)
        if m is not None:
            out.append(m)
    return out


def test_sse_messages_fields_comments_and_multiline_data():
    ms = messages(': hello\nretry: 1500\nid: 7\nevent: output\ndata: {"a":\ndata: 1}\n\nid: 8\ndata: {}\n\n')
    assert [(m.id, m.event, m.data) for m in ms] == [("7", "output", '{"a":\n1}'), ("8", "message", "{}")]
    assert ms[0].retry == 1500 and ms[1].retry is None


def test_an_event_is_its_whole_envelope_or_only_what_it_says():
    whole = messages('id: 3\ndata: {"id": 3, "type": "exit", "at": "t", "run_id": "run_x", "data": {"exit_code": 0}}\n\n')[0]
    e = stream_event_of(whole)
    assert (e.id, e.type, e.at, e.run_id, e.data) == ("3", "exit", "t", "run_x", {"exit_code": 0})
    bare = stream_event_of(messages('id: 4\nevent: output\ndata: {"stream": "text"}\n\n')[0])
    assert (bare.id, bare.type, bare.data) == ("4", "output", {"stream": "text"})


def test_ndjson_lines_and_an_error_mid_stream():
    assert ndjson_value('{"stream": "stdout", "data": "a"}\n') == {"stream": "stdout", "data": "a"}
    assert ndjson_value("   ") is None
    with pytest.raises(WarrenApiError) as err:
        ndjson_value('{"error": {"code": "box.unavailable", "message": "gone"}}')
    assert (err.value.status, err.value.code) == (0, "box.unavailable")
    with pytest.raises(WarrenApiError) as bad:
        ndjson_value("not json")
    assert bad.value.code == "response.invalid"


def test_error_answers_carry_the_api_code_or_http_status():
    e = error_from_answer(409, "Conflict", '{"error": {"code": "run.not_cancellable", "message": "it ended"}}')
    assert (e.status, e.code, e.message) == (409, "run.not_cancellable", "it ended")
    raw = error_from_answer(502, "Bad Gateway", "<html>upstream</html>")
    assert (raw.status, raw.code) == (502, "http.502")


def test_ids_and_home_paths_cannot_change_the_route():
    assert _seg("agt_1/../x") == "agt_1%2F..%2Fx"
    for bad in ("", ".", ".."):
        with pytest.raises(WarrenApiError):
            _seg(bad)
    assert _home("notes/a b.md") == "notes/a%20b.md"
    assert _home("../etc/passwd") == "..%2Fetc%2Fpasswd"
