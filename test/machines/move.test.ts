// Moving an agent between machines on real boxes: its files go with it and its next run runs on
// the target; room is checked first; a busy agent is refused; and a server killed half-way
// through a move leaves the agent whole on exactly one machine after its restart.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { LocalProvider } from "../../src/boxes/local/provider.js";
import { assistantAgent, runEnded, say, waitFor } from "../conversations/support.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { crashableServe } from "../support/recovery.js";
import { startTestServer, type TestServer } from "../support/server.js";

const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];
type Call = (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>;

async function runDone(call: Call, agentId: string, command: string): Promise<any> {
  const r = await call("POST", `/api/agents/${agentId}/runs`, { kind: "command", command });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const end = Date.now() + 60_000;
  for (;;) {
    const run = (await call("GET", `/api/runs/${r.body.id}`)).body;
    if (terminal.includes(run.status)) return run;
    if (Date.now() > end) throw new Error(`run ${run.id} is still ${run.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe("moving an agent", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: string;
  let m1: string;
  let m2: string;
  let small: string;
  let agent: string;

  before(async () => {
    t = await startTestServer();
    org = (await t.call("POST", "/api/orgs", { name: "movers" })).body.id;
    m1 = (await t.call("POST", "/api/machines", { org_id: org, name: "m1" })).body.id;
    m2 = (await t.call("POST", "/api/machines", { org_id: org, name: "m2" })).body.id;
    small = (await t.call("POST", "/api/machines", { org_id: org, name: "small", max_workspace_mib: 100 }))
      .body.id;
    agent = (
      await t.call("POST", "/api/agents", { org_id: org, machine_id: m1, name: "a", max_workspace_mib: 1024 })
    ).body.id;
  });
  after(async () => {
    for (const m of [m1, m2, small]) await t.call("POST", `/api/machines/${m}/stop`);
    await t.close();
  });

  test("its files go with it and its next run runs on the target", async () => {
    const wrote = await runDone(
      (m, u, b) => t.call(m, u, b),
      agent,
      "mkdir -p notes && echo kept > notes/a.txt && ln -s notes/a.txt link && id -u",
    );
    assert.equal(wrote.status, "succeeded", JSON.stringify(wrote));
    const before = (await t.call("GET", `/api/agents/${agent}`)).body;
    const r = await t.call("POST", `/api/agents/${agent}/move`, { machine_id: m2 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.machine_id, m2);
    const homes = t.server.provider.homes;
    assert.ok(!existsSync(homes.homeDir(m1, agent)), "the old copy is gone");
    const next = await runDone(
      (m, u, b) => t.call(m, u, b),
      agent,
      "cat notes/a.txt; readlink link; echo $HOME; id -u; stat -c %u notes/a.txt",
    );
    assert.equal(next.status, "succeeded", JSON.stringify(next));
    assert.equal(next.machine_id, m2);
    const [content, link, , uid, owner] = next.output.trim().split("\n");
    assert.equal(content, "kept");
    assert.equal(link, "notes/a.txt");
    assert.equal(owner, uid, "its files are its new uid's");
    assert.equal(before.machine_id, m1);
  });

  test("room is checked first, and a move to its own machine or another organisation's is refused", async () => {
    const full = await t.call("POST", `/api/agents/${agent}/move`, { machine_id: small });
    assert.equal(full.status, 400);
    assert.equal(full.body.error.code, "request.invalid");
    assert.match(full.body.error.message, /does not fit/);
    const same = await t.call("POST", `/api/agents/${agent}/move`, { machine_id: m2 });
    assert.equal(same.status, 400);
    const other = (await t.call("POST", "/api/orgs", { name: "elsewhere" })).body.id;
    const theirs = (await t.call("POST", "/api/machines", { org_id: other, name: "x" })).body.id;
    const cross = await t.call("POST", `/api/agents/${agent}/move`, { machine_id: theirs });
    assert.equal(cross.status, 404);
    assert.equal((await t.call("GET", `/api/agents/${agent}`)).body.machine_id, m2);
  });

  test("while it moves, a run, an exec, a file write and a terminal are refused and none waits; all are on the target after", async () => {
    const homes = t.server.provider.homes;
    const put = (p: string, data: string) =>
      t.inject({
        method: "PUT",
        url: `/api/agents/${agent}/files/${p}`,
        payload: data,
        headers: { "content-type": "application/octet-stream" },
      });
    const moving409 = (r: { status: number; body: any }, what: string) => {
      assert.equal(r.status, 409, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "generation.busy", what);
      assert.match(r.body.error.message, /being moved to another machine/, what);
    };
    const lost = ["late.txt", "exec.txt", "put.txt"];
    const real = homes.prepareHome.bind(homes);
    let reached!: () => void;
    const atCopy = new Promise<void>((r) => (reached = r));
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    // the move held just before it copies the home, until the runs below were asked
    homes.prepareHome = async (...args) => {
      reached();
      await gate;
      return real(...args);
    };
    // its terminal, open before the move, ends with it: none goes on typing into the old box
    const shell = await t.call("POST", `/api/agents/${agent}/cli`);
    assert.equal(shell.status, 200, JSON.stringify(shell.body));
    try {
      const moving = t.call("POST", `/api/agents/${agent}/move`, { machine_id: m1 });
      await atCopy;
      for (const wait of [false, true]) {
        const r = await t.call("POST", `/api/agents/${agent}/runs`, {
          kind: "command",
          command: "echo lost > late.txt",
          wait,
        });
        assert.equal(r.status, 409, `wait: ${wait}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "generation.busy");
        assert.match(r.body.error.message, /being moved/);
      }
      // the door to its box and its home's writes are shut as well, each with the same answer
      moving409(
        await t.call("POST", `/api/agents/${agent}/exec`, { command: "echo lost > exec.txt" }),
        "exec",
      );
      const wrote = await put("put.txt", "lost");
      moving409({ status: wrote.statusCode, body: JSON.parse(wrote.body) }, "file write");
      moving409(await t.call("POST", `/api/agents/${agent}/cli`), "terminal");
      // reads go on: the old copy is still the agent's until the move switches
      const read = await t.inject({ method: "GET", url: `/api/agents/${agent}/files/notes/a.txt` });
      assert.equal(read.statusCode, 200);
      assert.equal(read.body, "kept\n");
      for (const f of lost)
        assert.ok(!existsSync(path.join(homes.homeDir(m2, agent), f)), `${f} reached the old home`);
      const twice = await t.call("POST", `/api/agents/${agent}/move`, { machine_id: small });
      assert.equal(twice.status, 409, JSON.stringify(twice.body));
      assert.equal(twice.body.error.code, "generation.busy");
      open();
      const moved = await moving;
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.equal(moved.body.machine_id, m1);
    } finally {
      homes.prepareHome = real;
      open();
    }
    const runs = (await t.call("GET", `/api/agents/${agent}/runs`)).body.items;
    assert.ok(
      runs.every((r: any) => !r.argv.join(" ").includes("late.txt")),
      "no refused run was kept to start later",
    );
    const next = await runDone(
      (m, u, b) => t.call(m, u, b),
      agent,
      "cat notes/a.txt; test -e late.txt && echo late || echo none",
    );
    assert.equal(next.status, "succeeded", JSON.stringify(next));
    assert.equal(next.machine_id, m1);
    assert.equal(next.output, "kept\nnone\n");
    for (const f of lost)
      assert.ok(!existsSync(path.join(homes.homeDir(m1, agent), f)), `${f} reached the new home`);
    // and now each works, on the target
    const exec = await t.call("POST", `/api/agents/${agent}/exec`, { command: "echo now > exec.txt" });
    assert.equal(exec.status, 200, JSON.stringify(exec.body));
    assert.equal(exec.body.exit_code, 0, JSON.stringify(exec.body));
    assert.equal((await put("put.txt", "now")).statusCode, 204);
    const cli = await t.call("POST", `/api/agents/${agent}/cli`);
    assert.equal(cli.status, 200, JSON.stringify(cli.body));
    const there = homes.homeDir(m1, agent);
    assert.equal(readFileSync(path.join(there, "exec.txt"), "utf8"), "now\n");
    assert.equal(readFileSync(path.join(there, "put.txt"), "utf8"), "now");
  });

  test("a busy agent is refused with 409 generation.busy", async () => {
    const r = await t.call("POST", `/api/agents/${agent}/runs`, {
      kind: "command",
      command: "while [ ! -e go ]; do sleep 0.05; done; rm go",
    });
    try {
      const end = Date.now() + 30_000;
      while ((await t.call("GET", `/api/runs/${r.body.id}`)).body.status !== "running") {
        if (Date.now() > end) throw new Error("the run never started");
        await new Promise((res) => setTimeout(res, 30));
      }
      const busy = await t.call("POST", `/api/agents/${agent}/move`, { machine_id: m2 });
      assert.equal(busy.status, 409);
      assert.equal(busy.body.error.code, "generation.busy");
    } finally {
      await t.call("POST", `/api/agents/${agent}/exec`, { command: "touch go" });
    }
  });
});

describe("a moved agent's conversation", { skip: boxSkipReason() ?? false }, () => {
  let fake: FakeModelServer;
  let t: TestServer;
  let m1: string;
  let m2: string;

  before(async () => {
    fake = await startFakeOpenAI();
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) } });
    const org = (await t.call("POST", "/api/orgs", { name: "talkers" })).body.id;
    m1 = (await t.call("POST", "/api/machines", { org_id: org, name: "m1" })).body.id;
    m2 = (await t.call("POST", "/api/machines", { org_id: org, name: "m2" })).body.id;
  });
  after(async () => {
    for (const m of [m1, m2]) if (m) await t.call("POST", `/api/machines/${m}/stop`);
    await t?.close();
    await fake?.close();
  });

  test("comes along: its messages are read on the new machine and its next turn runs there", async () => {
    const org = (await t.call("GET", `/api/machines/${m1}`)).body.org_id;
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: "echo remembered > conv.txt" } }] },
      { text: "first answer, written down" },
      { tool_calls: [{ name: "run_command", input: { command: "cat conv.txt; pwd" } }] },
      { text: "second answer, after the move" },
    ]);
    const agent = await assistantAgent(t, { org, machine: m1 }, "talker", {
      baseUrl: fake.baseUrl,
      model: "talk",
      tools: ["run_command"],
    });
    const c = (await t.call("POST", `/api/agents/${agent.id}/conversations`, {})).body;
    const first = await runEnded(t, await say(t, c.id, "write it down"));
    assert.equal(first.status, "succeeded", JSON.stringify(first));
    assert.equal(first.machine_id, m1);

    // the turn's run lets go of the agent just after its status is written: busy until then
    const moved = await waitFor("the move to be taken", async () => {
      const r = await t.call("POST", `/api/agents/${agent.id}/move`, { machine_id: m2 });
      return r.status === 409 && r.body.error.code === "generation.busy" ? undefined : r;
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.equal(moved.body.machine_id, m2);

    const texts = async () =>
      (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items.map((m: any) => m.text);
    assert.deepEqual(await texts(), ["write it down", "first answer, written down"]);
    const conv = (await t.call("GET", `/api/conversations/${c.id}`)).body;
    assert.equal(conv.agent_id, agent.id);

    const asked = fake.requests.length;
    const second = await runEnded(t, await say(t, c.id, "what did you write?"));
    assert.equal(second.status, "succeeded", JSON.stringify(second));
    assert.equal(second.machine_id, m2, "the next turn runs on the new machine");
    assert.deepEqual(await texts(), [
      "write it down",
      "first answer, written down",
      "what did you write?",
      "second answer, after the move",
    ]);
    // the model was given the whole transcript, and the tool read the file the first turn wrote
    const last = JSON.stringify(fake.requests[fake.requests.length - 1]!.body.messages);
    assert.ok(fake.requests.length > asked);
    assert.match(last, /first answer, written down/);
    assert.match(last, /remembered/);
    assert.ok(
      !existsSync(t.server.provider.homes.homeDir(m1, agent.id)),
      "nothing is left on the old machine",
    );
  });
});

describe("a move killed half-way", { skip: boxSkipReason() ?? false }, () => {
  let served: Awaited<ReturnType<typeof crashableServe>> | undefined;
  let provider: LocalProvider;
  const call: Call = (method, url, body) => served!.call(method, url, body);
  const start = () => served!.start();
  const kill = () => served!.crash();

  before(async () => {
    served = await crashableServe(await mkdtemp(path.join(os.tmpdir(), "warren-move-")));
    provider = served.provider;
  });
  after(async () => {
    await served?.close();
  });

  test("the agent is whole on exactly one machine after the restart", async () => {
    await start();
    const org = (await call("POST", "/api/orgs", { name: "crash" })).body.id;
    const m1 = (await call("POST", "/api/machines", { org_id: org, name: "m1" })).body.id;
    const m2 = (await call("POST", "/api/machines", { org_id: org, name: "m2" })).body.id;
    const agent = (await call("POST", "/api/agents", { org_id: org, machine_id: m1, name: "a" })).body.id;
    // a home big enough that its copy takes a while: 2000 files
    const made = await runDone(
      call,
      agent,
      "mkdir -p many && head -c 40000000 /dev/urandom | split -a 4 -b 20000 - many/f && echo whole > mark.txt && find many -type f | sort | xargs cat | md5sum | cut -c1-32",
    );
    assert.equal(made.status, "succeeded", JSON.stringify(made));
    const sum = made.output.trim();
    const target = provider.homes.homeDir(m2, agent);
    const moving = call("POST", `/api/agents/${agent}/move`, { machine_id: m2 }).catch(() => null);
    const end = Date.now() + 30_000;
    while (!existsSync(target)) {
      if (Date.now() > end) throw new Error("the move never began its copy");
      await new Promise((r) => setImmediate(r));
    }
    await kill();
    await moving;
    await start();
    const a = (await call("GET", `/api/agents/${agent}`)).body;
    assert.ok([m1, m2].includes(a.machine_id), JSON.stringify(a));
    const other = a.machine_id === m1 ? m2 : m1;
    assert.ok(!existsSync(provider.homes.homeDir(other, agent)), "no copy is left on the other machine");
    const check = await runDone(
      call,
      agent,
      "cat mark.txt; find many -type f | sort | xargs cat | md5sum | cut -c1-32",
    );
    assert.equal(check.status, "succeeded", JSON.stringify(check));
    assert.deepEqual(check.output.trim().split("\n"), ["whole", sum]);
    assert.equal(check.machine_id, a.machine_id);
    // and it moves once more, whole, from wherever it is
    const again = await call("POST", `/api/agents/${agent}/move`, { machine_id: other });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const last = await runDone(call, agent, "cat mark.txt");
    assert.equal(last.output, "whole\n");
    assert.equal(last.machine_id, other);
  });
});
