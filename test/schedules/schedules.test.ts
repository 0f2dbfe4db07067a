// Schedules on real boxes: a fire on time (every_s and cron), each a run that says its
// schedule and slot; skip and queue_one; a failing schedule pausing itself; trigger, pause,
// and what the routes refuse.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { clockAt, orgWithMachine, scheduleRuns, terminal, until } from "./support.js";

for (const leg of dbLegs)
  describe(`schedules on ${leg.name}`, { skip: leg.skip ?? boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let agent: (name: string) => Promise<{ id: string }>;
    let cronAgent: { id: string };
    let cronSchedule: any;

    const create = async (agentId: string, body: Record<string, unknown>) => {
      const r = await t.call("POST", `/api/agents/${agentId}/schedules`, body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const get = async (id: string) => (await t.call("GET", `/api/schedules/${id}`)).body;
    const ended = (runs: any[]) => runs.filter((r) => terminal.includes(r.status));

    before(async () => {
      t = await startTestServer({ leg });
      ({ agent } = await orgWithMachine(t, "schedules"));
      // a cron schedule made first, checked last: it fires at the next minute
      cronAgent = await agent("cron");
      cronSchedule = await create(cronAgent.id, { cron: "* * * * *", kind: "command", command: "date +%s" });
    });
    after(async () => t.close());

    test("an every_s schedule fires on time, each fire a run with its schedule and slot", async () => {
      const a = await agent("every");
      const s = await create(a.id, {
        every_s: 2,
        kind: "command",
        command: "cat /agent/input",
        input: "tick",
      });
      assert.equal(s.overlap, "skip");
      assert.equal(s.catch_up, "one");
      assert.equal(s.kind, "command");
      assert.ok(s.next_fire_at, "it has a next slot");
      const created = Date.parse(s.created_at);
      assert.equal(Date.parse(s.next_fire_at), created + 2000, "every 2 s from its creation");
      const runs = await until(
        () => scheduleRuns(t, a.id, s.id),
        (rs) => ended(rs).length >= 2,
        "two runs ended",
      );
      for (const r of runs.slice(0, 2)) {
        const slot = Date.parse(r.scheduled_for);
        assert.equal((slot - created) % 2000, 0, "its slot is one of the schedule's");
        const late = Date.parse(r.created_at) - slot;
        assert.ok(late >= 0 && late < 1000, `the run was made ${late} ms after its slot`);
      }
      const first = (await t.call("GET", `/api/runs/${runs[0].id}`)).body;
      assert.equal(first.schedule_id, s.id);
      assert.equal(first.status, "succeeded", JSON.stringify(first));
      assert.equal(first.output, "tick");
      const after = await get(s.id);
      assert.ok(Date.parse(after.last_fired_at) >= Date.parse(runs[1].scheduled_for));
      assert.equal(after.failures, 0);
      assert.equal((await t.call("DELETE", `/api/schedules/${s.id}`)).status, 204);
      assert.equal((await t.call("GET", `/api/schedules/${s.id}`)).status, 404);
      // its runs keep their schedule
      assert.equal((await t.call("GET", `/api/runs/${runs[0].id}`)).body.schedule_id, s.id);
    });

    test("skip: no fire while the schedule's run is going on", async () => {
      const a = await agent("skip");
      const s = await create(a.id, { every_s: 1, kind: "command", command: "sleep 2.2" });
      const runs = await until(
        () => scheduleRuns(t, a.id, s.id),
        (rs) => ended(rs).length >= 2,
        "two runs ended",
      );
      await t.call("PATCH", `/api/schedules/${s.id}`, { paused: true });
      for (let i = 1; i < runs.length; i++)
        assert.ok(
          Date.parse(runs[i].created_at) >= Date.parse(runs[i - 1].ended_at),
          `run ${i} was made after run ${i - 1} ended`,
        );
      const after = await get(s.id);
      assert.ok(after.skipped >= 2, `skipped ${after.skipped}`);
      assert.equal(after.paused, true);
      assert.equal(after.next_fire_at, null);
    });

    test("queue_one: one run waits behind the one going on, no more", async () => {
      const a = await agent("queue");
      const s = await create(a.id, {
        every_s: 1,
        kind: "command",
        command: "sleep 1.6",
        overlap: "queue_one",
      });
      const runs = await until(
        () => scheduleRuns(t, a.id, s.id),
        (rs) => ended(rs).length >= 3,
        "three runs ended",
      );
      await t.call("PATCH", `/api/schedules/${s.id}`, { paused: true });
      // a second run was made while the first went on
      assert.ok(Date.parse(runs[1].created_at) < Date.parse(runs[0].ended_at), "the second waited behind it");
      for (let i = 2; i < runs.length; i++)
        assert.ok(
          Date.parse(runs[i].created_at) >= Date.parse(runs[i - 2].ended_at),
          `run ${i} was made once run ${i - 1} left the line`,
        );
      assert.ok((await get(s.id)).skipped >= 1);
    });

    test("three failed runs in a row pause the schedule, saying why", async () => {
      const a = await agent("fails");
      const s = await create(a.id, { every_s: 1, kind: "command", command: "echo no >&2; exit 3" });
      const paused = await until(
        () => get(s.id),
        (x) => x.paused,
        "paused",
      );
      assert.equal(paused.failures, 3);
      assert.match(paused.paused_reason, /paused after 3 failed runs in a row/);
      assert.match(paused.paused_reason, /ended failed/);
      assert.equal(paused.next_fire_at, null);
      const runs = await scheduleRuns(t, a.id, s.id);
      assert.equal(runs.length, 3, "no run after the third failure");
      for (const r of runs) assert.equal(r.status, "failed");
      // two slots later, still nothing more
      await clockAt(Date.now() + 2200);
      assert.equal((await scheduleRuns(t, a.id, s.id)).length, 3);
      // unpaused, its failures are cleared; what it missed meanwhile is not caught up
      const up = (await t.call("PATCH", `/api/schedules/${s.id}`, { paused: false, command: "true" })).body;
      assert.equal(up.paused, false);
      assert.equal(up.failures, 0);
      assert.equal(up.paused_reason, null);
      const more = await until(
        () => scheduleRuns(t, a.id, s.id),
        (rs) => ended(rs).length >= 4,
        "a run after unpausing",
      );
      assert.equal(more[3].status, "succeeded");
      assert.ok(Date.parse(more[3].scheduled_for) > Date.parse(up.last_fired_at) - 1);
      await t.call("DELETE", `/api/schedules/${s.id}`);
    });

    test("trigger starts a run now, as the caller, with its schedule", async () => {
      const a = await agent("trigger");
      const s = await create(a.id, { cron: "0 0 1 1 *", kind: "command", argv: ["echo", "now"] });
      const r = await t.call("POST", `/api/schedules/${s.id}/trigger`);
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const run = await until(
        async () => (await t.call("GET", `/api/runs/${r.body.run_id}`)).body,
        (x) => terminal.includes(x.status),
        "ended",
      );
      assert.equal(run.status, "succeeded");
      assert.equal(run.output, "now\n");
      assert.equal(run.schedule_id, s.id);
      assert.ok(Math.abs(Date.parse(run.scheduled_for) - Date.parse(run.created_at)) < 1000);
      const listed = (await t.call("GET", `/api/agents/${a.id}/schedules`)).body.items;
      assert.deepEqual(
        listed.map((x: any) => x.id),
        [s.id],
      );
      assert.equal(listed[0].next_fire_at.slice(5, 16), "01-01T00:00");
    });

    test("refuses what could never make a run, naming the field", async () => {
      const a = await agent("bad");
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ cron: "61 * * * *", kind: "command", command: "true" }, /cron: minute: 61/],
        [{ cron: "* * *", kind: "command", command: "true" }, /cron: a cron expression has 5 fields/],
        [{ cron: "0 0 31 2 *", kind: "command", command: "true" }, /never comes/],
        [
          { every_s: 5, cron: "* * * * *", kind: "command", command: "true" },
          /exactly one of cron or every_s/,
        ],
        [{ kind: "command", command: "true" }, /exactly one of cron or every_s/],
        [{ every_s: 0, kind: "command", command: "true" }, /every_s/],
        [{ every_s: 5, timezone: "Mars/Olympus", kind: "command", command: "true" }, /timezone/],
        [{ every_s: 5, kind: "command" }, /argv/],
        [{ every_s: 5, command: "true" }, /command: an agent schedule/],
        [{ every_s: 5, overlap: "sometimes", input: "x" }, /overlap/],
        [
          {
            every_s: 5,
            kind: "command",
            command: "true",
            start_at: "2027-01-02T00:00:00Z",
            end_at: "2027-01-01T00:00:00Z",
          },
          /end_at/,
        ],
      ];
      for (const [body, msg] of cases) {
        const r = await t.call("POST", `/api/agents/${a.id}/schedules`, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.error.code, "request.invalid");
        assert.match(r.body.error.message, msg, JSON.stringify(body));
      }
      const big = await t.call("POST", `/api/agents/${a.id}/schedules`, {
        every_s: 5,
        input: "x".repeat(300 * 1024),
      });
      assert.equal(big.status, 413);
      assert.equal(big.body.error.code, "run.input_too_large");
      assert.equal((await t.call("GET", "/api/schedules/sch_0000000000000000")).status, 404);
      // start_at and end_at bound the slots; a time zone reads the cron's wall clock
      const s = await create(a.id, {
        cron: "0 9 * * *",
        timezone: "Europe/Paris",
        kind: "command",
        command: "true",
        start_at: "2030-01-01T00:00:00Z",
        end_at: "2030-01-03T00:00:00Z",
      });
      assert.equal(s.next_fire_at, "2030-01-01T08:00:00.000Z");
      const ended = (
        await t.call("PATCH", `/api/schedules/${s.id}`, { end_at: "2020-01-01T00:00:00Z", start_at: null })
      ).body;
      assert.equal(ended.next_fire_at, null, "past its end, it never fires");
    });

    test("a cron schedule fires at the minute, within a second", async () => {
      const runs = await until(
        () => scheduleRuns(t, cronAgent.id, cronSchedule.id),
        (rs) => rs.length >= 1,
        "fired",
        75_000,
      );
      const slot = Date.parse(runs[0].scheduled_for);
      assert.equal(slot % 60_000, 0, "on a minute");
      const late = Date.parse(runs[0].created_at) - slot;
      assert.ok(late >= 0 && late < 1000, `the run was made ${late} ms after its minute`);
    });
  });
