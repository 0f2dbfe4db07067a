// The one door for an agent's work (src/workloads): every kind of agent command goes through
// it, on a real server with real boxes. Each kind prints a secret of the agent and the
// variables the door sets; what comes back (an exec's answer, a run's output and trace, the
// assistant's tool result, the terminal's screen) is redacted, and carries the door's
// environment. And no file of src/ but the door holds the runtime's exec or pty.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { anthropicAt, eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { startFakeAnthropic, type FakeModelServer } from "../support/fake-models.js";
import { sourceFiles, SRC } from "../support/sources.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { tty, type Tty } from "../terminal/ws.js";
import { builtins, makeAgent, modelKey } from "../support/org.js";

const SECRET = "door-s3cret-VALUE-5f1e2d3c4b";
// the secret, the agent's id, the proxy the door points at, and the run id (empty outside a run)
const PRINT =
  'printf "%s|%s|%s|%s\\n" "$DOOR_TOKEN" "$WARREN_AGENT_ID" "$HTTPS_PROXY" "${WARREN_RUN_ID:-none}"';

test("only the door runs commands in a box: no other file of src/ calls the runtime's exec or pty", () => {
  const root = SRC;
  const allowed = [path.join(root, "workloads"), path.join(root, "runtime"), path.join(root, "boxd")];
  const offenders: string[] = [];
  for (const file of sourceFiles()) {
    if (allowed.some((a) => file.startsWith(a + path.sep))) continue;
    const text = readFileSync(file, "utf8");
    if (/\bruntime\??\.(exec|pty)\(/.test(text)) offenders.push(`${file}: calls runtime.exec/pty`);
    if (/Pick<MachineRuntime,[^>]*"(exec|pty)"/.test(text))
      offenders.push(`${file}: takes the runtime's exec/pty`);
    if (/redacted-io|terminal-redaction/.test(text)) offenders.push(`${file}: redacts box output itself`);
  }
  assert.deepEqual(offenders, []);
});

describe("every agent command goes through the door", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let anth: FakeModelServer;
  let org: { id: string };
  let machine: { id: string };
  let agent: { id: string };
  const ttys: Tty[] = [];

  const expectDoor = (text: string, runId: string | null) => {
    assert.ok(!text.includes(SECRET), `the secret left the box: ${text}`);
    const line = text.split("\n").find((l) => l.includes(`|${agent.id}|`));
    assert.ok(line, `the door's variables are missing from: ${text}`);
    // a terminal's line may begin with its escapes and a carriage return
    const shown = line
      .replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[a-zA-Z]`, "g"), "")
      .split("\r")
      .pop()!;
    const [token, id, proxy, run] = shown.trim().split("|");
    assert.equal(token, "[redacted]");
    assert.equal(id, agent.id);
    assert.match(proxy!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(run, runId ?? "none");
  };

  before(async () => {
    anth = await startFakeAnthropic();
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(anth) } });
    org = (await t.call("POST", "/api/orgs", { name: "door" })).body;
    await modelKey(t.call, org.id, [anth], "sk-ant-door-test-0a1b2c3d");
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    agent = await makeAgent(
      t.call,
      { org, machine },
      {
        name: "a",
        model: anthropicAt(anth.baseUrl),
        tools: builtins("run_command"),
        tool_policy: "permit(principal, action, resource);",
      },
    );
    const s = await t.call("POST", "/api/secrets", {
      org_id: org.id,
      name: "DOOR_TOKEN",
      description: "",
      value: SECRET,
      grants: [{ scope: "agent", id: agent.id }],
    });
    assert.equal(s.status, 201, JSON.stringify(s.body));
  });
  after(async () => {
    for (const x of ttys) x.ws.close();
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await anth?.close();
  });

  test("exec: buffered and streamed", async () => {
    const r = await t.call("POST", `/api/agents/${agent.id}/exec`, { command: PRINT });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    expectDoor(r.body.stdout, null);
    const streamed = await t.inject({
      method: "POST",
      url: `/api/agents/${agent.id}/exec`,
      headers: { accept: "application/x-ndjson" },
      payload: { command: `${PRINT} >&2` },
    });
    assert.equal(streamed.statusCode, 200, streamed.body);
    const lines = streamed.body
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { stream?: string; data?: string; exit_code?: number });
    assert.equal(lines.at(-1)?.exit_code, 0);
    expectDoor(lines.map((l) => (l.stream === "stderr" ? l.data : "")).join(""), null);
  });

  test("a command run: its output, its trace and its receipt", async () => {
    const r = await t.call("POST", `/api/agents/${agent.id}/runs`, { kind: "command", command: PRINT });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    let run: any;
    for (;;) {
      run = (await t.call("GET", `/api/runs/${r.body.id}`)).body;
      if (run.ended_at) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    expectDoor(run.output, run.id);
    const events = (await t.call("GET", `/api/runs/${run.id}/events`)).body.items as any[];
    const traced = events
      .filter((e) => e.type === "output")
      .map((e) => e.data.data)
      .join("");
    expectDoor(traced, run.id);
    assert.ok(!JSON.stringify(events).includes(SECRET));
    assert.equal(run.receipt.uid, (await t.call("GET", `/api/agents/${agent.id}`)).body.uid);
  });

  test("the assistant's run_command: the answer the model is given and the run's records", async () => {
    anth.script([{ tool_calls: [{ name: "run_command", input: { command: PRINT } }] }, { text: "done" }]);
    anth.requests.length = 0;
    const { run, events } = await runAgent(t, agent.id, "print it");
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    const [call] = eventsOfType(events, "tool_call");
    assert.equal(call.decision, "allow");
    assert.ok(!JSON.stringify(events).includes(SECRET), "no event holds the secret");
    // the model's second call carries the tool's answer: the door's variables, the secret redacted
    assert.equal(anth.requests.length, 2);
    const history = JSON.stringify(anth.requests[1]!.body.messages);
    assert.ok(!history.includes(SECRET), "the model was handed the secret");
    expectDoor(history.replace(/\\n/g, "\n").replace(/"/g, "\n"), run.id);
  });

  test("the terminal: what it prints, live and in the scrollback", async () => {
    const url = `${t.url!.replace(/^http/, "ws")}/api/agents/${agent.id}/cli/tty`;
    const x = await tty(url);
    ttys.push(x);
    await x.message("attached");
    // a terminal holds no secret in its environment: the value reaches it only from a file
    await putHomeFile(t, agent.id, "v.txt", SECRET);
    x.type(
      `printf "%s|%s|%s|%s\\n" "$(cat v.txt)" "$WARREN_AGENT_ID" "$HTTPS_PROXY" "\${WARREN_RUN_ID:-none}"\r`,
    );
    await x.expect(new RegExp(`\\|${agent.id}\\|http`));
    const screen = x.out();
    const line = screen
      .split(/\r?\n/)
      .filter((l) => l.includes(`|${agent.id}|http`))
      .pop()!;
    expectDoor(line, null);
    // a second viewer is replayed the scrollback, redacted too
    const y = await tty(url);
    ttys.push(y);
    await y.message("attached");
    await y.expect(new RegExp(`\\|${agent.id}\\|http`));
    assert.ok(!y.out().includes(SECRET));
  });
});
