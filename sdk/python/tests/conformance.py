"""The Python runner of the conformance cases (test/conformance/cases.json): each action
through the warren package, sync or async, its result shaped as the TypeScript runner
(test/conformance/runner.ts) shapes it, and the same expectations checked."""

import asyncio
import json
import re
from typing import Any, Dict, List, Optional

from warren import AsyncClient, Client, WarrenApiError

FOLLOW_S = 120.0


def fill(value: Any, variables: Dict[str, str]) -> Any:
    """`$name` in every string of `value` replaced by the variable."""
    if isinstance(value, str):
        return re.sub(r"\$([a-z_]+)", lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [fill(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, variables) for k, v in value.items()}
    return value


def at(result: Any, dotted: str) -> Any:
    v = result
    for key in dotted.split("."):
        v = v.get(key) if isinstance(v, dict) else None
    return v


def _follow_result(events: List[Any], run: str, status: str) -> Dict[str, Any]:
    mine = [e for e in events if e.run_id == run]
    text = [e for e in mine if e.type == "output" and isinstance(e.data, dict) and e.data.get("stream") == "text"]
    answer = next((e for e in mine if e.type == "message" and isinstance(e.data, dict) and e.data.get("role") == "agent"), None)
    return {
        "types": [e.type for e in mine],
        "streamed": "".join(str(e.data.get("data")) for e in text),
        "pieces": len(text),
        "answer": answer.data.get("text") if answer else None,
        "exit_status": status,
    }


def act_sync(client: Client, step: Dict[str, Any]) -> Any:
    do, agent = step["do"], step.get("agent")
    if do == "exec":
        return client.agents.exec(agent, step["body"])
    if do == "exec_stream":
        out: Dict[str, Any] = {"stdout": "", "stderr": "", "exit_code": None, "last_is_exit": False}
        for e in client.agents.exec_stream(agent, step["body"]):
            out["last_is_exit"] = "stream" not in e
            if "stream" in e:
                out[e["stream"]] += e["data"]
            else:
                out["exit_code"] = e["exit_code"]
        return out
    if do == "write_file":
        client.files.write(agent, step["path"], step["text"])
        return None
    if do == "read_file":
        return {"text": client.files.read(agent, step["path"]).decode("utf-8")}
    if do == "list_folder":
        return {"names": [e["name"] for e in client.files.list(agent, path=step["path"])["entries"]]}
    if do == "start_run":
        return client.runs.create(agent, step["body"])
    if do == "wait_run":
        return client.runs.wait(step["run"], timeout=FOLLOW_S)
    if do == "get_run":
        return client.runs.get(step["run"])
    if do == "run_events":
        return {"types": [e["type"] for e in client.runs.events(step["run"])["items"]]}
    if do == "run_stream":
        streamed = list(client.runs.events_stream(step["run"]))
        trace = [str(e["id"]) for e in client.runs.events(step["run"])["items"]]
        return {"types": [e.type for e in streamed], "same_ids_as_events": [e.id for e in streamed] == trace}
    if do == "create_conversation":
        return client.conversations.create(agent, step["body"])
    if do == "send_message":
        return client.conversations.message(step["conversation"], {"text": step["text"]})
    if do == "follow_conversation":
        events = []
        for e in client.conversations.events(step["conversation"], timeout=FOLLOW_S):
            events.append(e)
            if e.type == "exit" and e.run_id == step["run"]:
                break
        return _follow_result(events, step["run"], client.runs.wait(step["run"], timeout=FOLLOW_S)["status"])
    raise AssertionError(f"no action {do}")


async def act_async(client: AsyncClient, step: Dict[str, Any]) -> Any:
    do, agent = step["do"], step.get("agent")
    if do == "exec":
        return await client.agents.exec(agent, step["body"])
    if do == "exec_stream":
        out: Dict[str, Any] = {"stdout": "", "stderr": "", "exit_code": None, "last_is_exit": False}
        async for e in client.agents.exec_stream(agent, step["body"]):
            out["last_is_exit"] = "stream" not in e
            if "stream" in e:
                out[e["stream"]] += e["data"]
            else:
                out["exit_code"] = e["exit_code"]
        return out
    if do == "write_file":
        await client.files.write(agent, step["path"], step["text"])
        return None
    if do == "read_file":
        return {"text": (await client.files.read(agent, step["path"])).decode("utf-8")}
    if do == "list_folder":
        return {"names": [e["name"] for e in (await client.files.list(agent, path=step["path"]))["entries"]]}
    if do == "start_run":
        return await client.runs.create(agent, step["body"])
    if do == "wait_run":
        return await client.runs.wait(step["run"], timeout=FOLLOW_S)
    if do == "get_run":
        return await client.runs.get(step["run"])
    if do == "run_events":
        return {"types": [e["type"] for e in (await client.runs.events(step["run"]))["items"]]}
    if do == "run_stream":
        streamed = [e async for e in client.runs.events_stream(step["run"])]
        trace = [str(e["id"]) for e in (await client.runs.events(step["run"]))["items"]]
        return {"types": [e.type for e in streamed], "same_ids_as_events": [e.id for e in streamed] == trace}
    if do == "create_conversation":
        return await client.conversations.create(agent, step["body"])
    if do == "send_message":
        return await client.conversations.message(step["conversation"], {"text": step["text"]})
    if do == "follow_conversation":

        async def follow() -> List[Any]:
            events = []
            stream = client.conversations.events(step["conversation"])
            try:
                async for e in stream:
                    events.append(e)
                    if e.type == "exit" and e.run_id == step["run"]:
                        break
            finally:
                await stream.aclose()  # type: ignore[attr-defined]
            return events

        events = await asyncio.wait_for(follow(), FOLLOW_S)
        return _follow_result(events, step["run"], (await client.runs.wait(step["run"], timeout=FOLLOW_S))["status"])
    raise AssertionError(f"no action {do}")


def check(where: str, step: Dict[str, Any], result: Any, error: Optional[WarrenApiError]) -> None:
    want = step.get("expect") or {}
    if error is not None:
        if "error" not in want:
            raise error
        assert {"status": error.status, "code": error.code} == want["error"], f"{where}: {error!r}"
        return
    assert "error" not in want, f"{where}: expected {want.get('error')}, it succeeded"
    for k, v in (want.get("equals") or {}).items():
        assert at(result, k) == v, f"{where}: {k} is {at(result, k)!r}, not {v!r}"
    for k, values in (want.get("includes") or {}).items():
        got = at(result, k)
        assert isinstance(got, list), f"{where}: {k} is not a list"
        for v in values:
            assert v in got, f"{where}: {k} lacks {v!r} ({got!r})"
    for k, n in (want.get("at_least") or {}).items():
        assert (at(result, k) or 0) >= n, f"{where}: {k} is {at(result, k)!r}, below {n}"


def load(fixture_path: str) -> "tuple[Dict[str, Any], List[Dict[str, Any]]]":
    with open(fixture_path, encoding="utf-8") as f:
        fixture = json.load(f)
    with open(fixture["cases"], encoding="utf-8") as f:
        return fixture, json.load(f)["cases"]


def run_case_sync(case: Dict[str, Any], fixture: Dict[str, Any], sdk: str) -> None:
    variables = {**fixture["vars"], "sdk": sdk}
    clients: Dict[str, Client] = {}
    try:
        for i, raw in enumerate(case["steps"]):
            step = fill(raw, variables)
            who = step.get("as", "owner")
            if who not in clients:
                clients[who] = Client(fixture["base_url"], headers={"x-forwarded-email": fixture["identities"][who]})
            result, error = None, None
            try:
                result = act_sync(clients[who], step)
            except WarrenApiError as err:
                error = err
            check(f"{case['name']}, step {i + 1} ({step['do']})", step, result, error)
            for name, p in (step.get("save") or {}).items():
                variables[name] = str(at(result, p))
    finally:
        for c in clients.values():
            c.close()


async def run_case_async(case: Dict[str, Any], fixture: Dict[str, Any], sdk: str) -> None:
    variables = {**fixture["vars"], "sdk": sdk}
    clients: Dict[str, AsyncClient] = {}
    try:
        for i, raw in enumerate(case["steps"]):
            step = fill(raw, variables)
            who = step.get("as", "owner")
            if who not in clients:
                clients[who] = AsyncClient(fixture["base_url"], headers={"x-forwarded-email": fixture["identities"][who]})
            result, error = None, None
            try:
                result = await act_async(clients[who], step)
            except WarrenApiError as err:
                error = err
            check(f"{case['name']}, step {i + 1} ({step['do']})", step, result, error)
            for name, p in (step.get("save") or {}).items():
                variables[name] = str(at(result, p))
    finally:
        for c in clients.values():
            await c.close()
