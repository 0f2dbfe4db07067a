// Catch-up across a stopped server: fires missed while it was down for three slots become
// exactly one run (catch_up "one"), for the latest slot missed, or none (catch_up "none");
// the schedule then goes on at its own slots.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { clockAt, orgWithMachine, scheduleRuns, until } from "./support.js";

const EVERY_S = 2;

for (const leg of dbLegs)
  test(
    `a server stopped for three slots catches up with one run, or none (${leg.name})`,
    { skip: leg.skip ?? boxSkipReason() ?? false },
    async () => {
      const db = await leg.fresh();
      const env: Record<string, string> = db.url ? { DATABASE_URL: db.url } : {};
      const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-catch-up-"));
      let t: TestServer | undefined;
      try {
        t = await startTestServer({ stateRoot, env });
        const { agent } = await orgWithMachine(t, "catch-up");
        const one = await agent("one");
        const none = await agent("none");
        const mk = async (agentId: string, catchUp: string) =>
          (
            await t!.call("POST", `/api/agents/${agentId}/schedules`, {
              every_s: EVERY_S,
              kind: "command",
              command: "true",
              catch_up: catchUp,
            })
          ).body;
        const sOne = await mk(one.id, "one");
        const sNone = await mk(none.id, "none");
        assert.equal(sNone.catch_up, "none");
        // both fire once while the server runs
        for (const [a, s] of [
          [one, sOne],
          [none, sNone],
        ] as const)
          await until(
            () => scheduleRuns(t!, a.id, s.id),
            (rs) => rs.length >= 1,
            "fired",
          );
        await t.server.close();
        t = undefined;
        const stoppedAt = Date.now();
        // down for at least three of its slots
        await clockAt(stoppedAt + 3 * EVERY_S * 1000 + 300);
        // every slot up to here was missed while the server was down; slots during its boot
        // (before its schedules start firing) count as missed too, later ones fire as usual
        const restartingAt = Date.now();
        t = await startTestServer({ stateRoot, env });
        const restartedAt = Date.now();

        // catch_up "one": exactly one run for every slot missed while down, for the latest
        const runsOne = await until(
          () => scheduleRuns(t!, one.id, sOne.id),
          (rs) => rs.some((r) => Date.parse(r.scheduled_for) > stoppedAt),
          "caught up",
        );
        const afterStop = (await scheduleRuns(t, one.id, sOne.id))
          .filter((r) => Date.parse(r.scheduled_for) > stoppedAt)
          .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
        const caught = afterStop[0];
        const forMissed = afterStop.filter(
          (r) => Date.parse(r.scheduled_for) <= Date.parse(caught.scheduled_for),
        );
        assert.equal(forMissed.length, 1, `one run for the missed slots: ${JSON.stringify(forMissed)}`);
        assert.ok(runsOne.length >= 2);
        // it is for the latest slot missed (none before the server came back is left), and
        // started as the server came back
        assert.ok(Date.parse(caught.scheduled_for) > restartingAt - EVERY_S * 1000, JSON.stringify(caught));
        assert.ok(Date.parse(caught.created_at) >= restartingAt, JSON.stringify(caught));
        assert.ok(Date.parse(caught.created_at) <= restartedAt + EVERY_S * 1000, JSON.stringify(caught));

        // catch_up "none": nothing for the missed slots; the next slot fires as usual
        const runsNone = await until(
          () => scheduleRuns(t!, none.id, sNone.id),
          (rs) => rs.some((r) => Date.parse(r.scheduled_for) > restartingAt),
          "fired at its next slot",
        );
        const downNone = runsNone.filter(
          (r) => Date.parse(r.scheduled_for) > stoppedAt && Date.parse(r.scheduled_for) <= restartingAt,
        );
        assert.deepEqual(downNone, [], "no run for the slots missed");
        const next = runsNone.find((r) => Date.parse(r.scheduled_for) > restartingAt);
        assert.ok(Date.parse(next.created_at) - Date.parse(next.scheduled_for) < 1000, "on time");
        const view = (await t.call("GET", `/api/schedules/${sNone.id}`)).body;
        assert.ok(Date.parse(view.last_fired_at) > stoppedAt, "the missed slots are passed over");

        // "one" goes on at its own slots after catching up
        await until(
          () => scheduleRuns(t!, one.id, sOne.id),
          (rs) => rs.some((r) => Date.parse(r.scheduled_for) > Date.parse(caught.scheduled_for)),
          "fired after catching up",
        );
      } finally {
        if (t) {
          for (const b of await t.server.provider.list())
            await t.server.provider.remove(b.id).catch(() => {});
          await t.server.close();
        }
        await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
        await db.drop();
      }
    },
  );
