// The live stream of a conversation (and of a run) as server-sent events over real HTTP: taken
// up with Last-Event-ID after a dropped connection and after the server restarted on the same
// state, with no event lost or doubled; a turn cut short by the server's stop is interrupted,
// and the next message after the restart goes on from the transcript.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { dbLegs } from "../support/db.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { allEvents, assistantAgent, readSse, runEnded, say, waitFor } from "./support.js";

for (const leg of dbLegs)
  describe(`conversation streams on ${leg.name}`, { skip: boxSkipReason() ?? leg.skip ?? false }, () => {
    let fake: FakeModelServer;
    let stateRoot: string;
    let db: { url: string | undefined; drop(): Promise<void> } | undefined;
    let t: TestServer | undefined;
    // the server stopped for the restart, until the next one is up (its box goes on meanwhile)
    let stopped: TestServer | undefined;
    // the same state (and database) across the restart
    const start = async () =>
      (t = await startTestServer({
        listen: true,
        stateRoot,
        env: {
          WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake),
          ...(db?.url ? { DATABASE_URL: db.url } : {}),
        },
      }));

    before(async () => {
      fake = await startFakeOpenAI();
      stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-conv-"));
      db = await leg.fresh();
    });
    after(async () => {
      if (t) await t.close();
      // a restart that did not come up: the box the stopped server left goes all the same
      else if (stopped)
        for (const b of await stopped.server.provider.list()) await stopped.server.provider.remove(b.id);
      await fake?.close();
      await db?.drop();
      await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    });

    test("resumed with Last-Event-ID after a dropped connection and after a restart: nothing lost, nothing doubled", async () => {
      let s = await start();
      const org = (await s.call("POST", "/api/orgs", { name: "stream" })).body;
      const machine = (
        await s.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 500 })
      ).body;
      const where = { org: org.id, machine: machine.id };
      fake.script([
        { tool_calls: [{ name: "run_command", input: { command: "echo one" } }] },
        { text: "first turn answered with several words in it" },
        { tool_calls: [{ name: "run_command", input: { command: "touch started; sleep 600" } }] },
        { text: "after the restart" },
        // the interrupted turn's runner may still ask the model once more in its grace period
        // (its answer then stays in the transcript, not among the messages): one more the same
        { text: "after the restart" },
      ]);
      const agent = await assistantAgent(s, where, "streamer", {
        baseUrl: fake.baseUrl,
        model: "stream",
        tools: ["run_command"],
      });
      const c = (await s.call("POST", `/api/agents/${agent.id}/conversations`, {})).body;
      const url = () => `${s.url}/api/conversations/${c.id}/events`;

      // a live reader from the start, dropped after a few events
      const live = readSse(url(), { until: (ev) => ev.length >= 4 });
      const r1 = await say(s, c.id, "first");
      const head = await live;
      assert.match(head.contentType ?? "", /^text\/event-stream/);
      assert.equal(head.events.length, 4);
      assert.equal(head.events[0]!.event, "message");
      assert.equal(head.events[0]!.data.data.text, "first");
      assert.equal((await runEnded(s, r1)).status, "succeeded");
      const full1 = await allEvents(s, c.id);
      // taken up after the last id it got: exactly the rest
      const lastSeen = head.events[head.events.length - 1]!.id;
      const rest = await readSse(url(), {
        lastEventId: lastSeen,
        until: (ev) => ev.length > 0 && ev[ev.length - 1]!.id >= full1[full1.length - 1]!.id,
      });
      assert.deepEqual(
        [...head.events, ...rest.events].map((e) => e.id),
        full1.map((e) => e.id),
      );
      assert.deepEqual([...head.events, ...rest.events], full1);
      // ?after= does the same for clients that cannot set the header
      const byQuery = await readSse(`${url()}?after=${lastSeen}`, {
        until: (ev) => ev.length >= rest.events.length,
      });
      assert.deepEqual(byQuery.events, rest.events);

      // a turn going on when the server stops: interrupted
      const r2 = await say(s, c.id, "second");
      await waitFor("the second turn's command", async () => {
        const r = await s.inject({ method: "GET", url: `/api/agents/${agent.id}/files/started` });
        return r.statusCode === 200;
      });
      // and one waiting in line behind it: interrupted too, never started
      const r2q = await say(s, c.id, "second, queued");
      await waitFor("the queued turn's message in the stream", async () =>
        (await allEvents(s, c.id)).some((e) => e.event === "queued" && e.data.run_id === r2q),
      );
      const before = await allEvents(s, c.id);
      const seen = before[before.length - 1]!.id;
      // the server stops as in a restart, its box going on for the next server to adopt. Not
      // TestServer.close: it removes the box first, and the turn's command failing under it lets
      // the turn go on to answer, which can beat the server's stop on a busy host
      stopped = s;
      t = undefined;
      await s.server.close();
      s = await start();
      stopped = undefined;
      const turn = (await s.call("GET", `/api/runs/${r2}`)).body;
      assert.ok(["cancelled", "lost"].includes(turn.status), turn.status);
      assert.match(turn.status_reason, /^interrupted/);
      const queued = (await s.call("GET", `/api/runs/${r2q}`)).body;
      assert.equal(queued.status, "cancelled");
      assert.equal(queued.started_at, null, "it never started");
      assert.match(queued.status_reason, /^interrupted: the server stopped/);
      const r3 = await say(s, c.id, "third");
      const third = await runEnded(s, r3);
      assert.equal(third.status, "succeeded", JSON.stringify(third).slice(0, 1500));
      const full = await allEvents(s, c.id);
      const resumed = await readSse(url(), {
        lastEventId: seen,
        until: (ev) => ev.length > 0 && ev[ev.length - 1]!.id >= full[full.length - 1]!.id,
      });
      assert.deepEqual(
        [...before, ...resumed.events],
        full,
        "across the restart, every event once, in order",
      );
      assert.deepEqual(
        full.map((e) => e.id),
        full.map((_, i) => i + 1),
      );
      assert.ok(
        resumed.events.some((e) => e.event === "interrupted" && e.data.run_id === r2),
        "the interrupted turn says so in the stream",
      );
      assert.ok(
        resumed.events.some((e) => e.event === "interrupted" && e.data.run_id === r2q),
        "so does the turn that waited in line",
      );
      const messages = (await s.call("GET", `/api/conversations/${c.id}/messages`)).body.items.map(
        (m: any) => m.text,
      );
      assert.deepEqual(messages, [
        "first",
        "first turn answered with several words in it",
        "second",
        "second, queued",
        "third",
        "after the restart",
      ]);
      const history = JSON.stringify(fake.requests[fake.requests.length - 1]!.body.messages);
      assert.ok(
        history.includes("first turn answered") && history.includes("second"),
        "the next turn went on from the transcript",
      );
    });

    test("a run's events as server-sent events: resumed after an id, ended with the run", async () => {
      const s = t ?? (await start());
      const org = (await s.call("POST", "/api/orgs", { name: "runs" })).body;
      const machine = (
        await s.call("POST", "/api/machines", { org_id: org.id, name: "m2", max_workspace_mib: 500 })
      ).body;
      const agent = (
        await s.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "cmd" })
      ).body;
      const run = (
        await s.call("POST", `/api/agents/${agent.id}/runs`, { kind: "command", command: "echo streamed" })
      ).body;
      // the stream ends by itself once the run has ended and every event was sent
      const all = await readSse(`${s.url}/api/runs/${run.id}/events`, { until: () => false });
      const json = (await s.call("GET", `/api/runs/${run.id}/events`)).body.items;
      assert.deepEqual(
        all.events.map((e) => e.id),
        json.map((e: any) => e.id),
      );
      assert.ok(all.events.some((e) => e.event === "exit"));
      assert.ok(JSON.stringify(all.events).includes("streamed"));
      const tail = await readSse(`${s.url}/api/runs/${run.id}/events`, {
        lastEventId: json[1].id,
        until: () => false,
      });
      assert.deepEqual(
        tail.events.map((e) => e.id),
        json.slice(2).map((e: any) => e.id),
      );
    });
  });
