import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isTimeZone, nextCron, parseCron } from "./cron.js";

const next = (expr: string, after: string, tz = "UTC") =>
  nextCron(parseCron(expr), new Date(after), tz)?.toISOString() ?? null;

/** The first `n` fires after `after`. */
const fires = (expr: string, after: string, n: number, tz = "UTC") => {
  const c = parseCron(expr);
  const out: string[] = [];
  let t = new Date(after);
  for (let i = 0; i < n; i++) {
    const d = nextCron(c, t, tz);
    if (!d) break;
    out.push(d.toISOString());
    t = d;
  }
  return out;
};

describe("cron expressions", () => {
  it("fires every minute, strictly after the time given", () => {
    assert.equal(next("* * * * *", "2026-12-02T05:00:00.000Z"), "2026-12-02T05:01:00.000Z");
    assert.equal(next("* * * * *", "2026-12-02T05:00:59.999Z"), "2026-12-02T05:01:00.000Z");
  });

  it("reads steps, ranges, lists and names", () => {
    assert.deepEqual(fires("*/15 * * * *", "2026-12-02T05:07:00Z", 3), [
      "2026-12-02T05:15:00.000Z",
      "2026-12-02T05:30:00.000Z",
      "2026-12-02T05:45:00.000Z",
    ]);
    assert.deepEqual(fires("0 9-17/4 * * mon-fri", "2026-12-04T12:00:00Z", 3), [
      "2026-12-04T13:00:00.000Z",
      "2026-12-04T17:00:00.000Z",
      "2026-12-07T09:00:00.000Z", // Friday then Monday
    ]);
    assert.deepEqual(fires("5,10 0 1 jan,JUL *", "2026-12-02T00:00:00Z", 3), [
      "2027-01-01T00:05:00.000Z",
      "2027-01-01T00:10:00.000Z",
      "2027-07-01T00:05:00.000Z",
    ]);
    assert.equal(next("10/20 * * * *", "2026-12-02T05:31:00Z"), "2026-12-02T05:50:00.000Z");
  });

  it("takes 7 as Sunday and a restricted day of month or of week as either", () => {
    assert.equal(next("0 0 * * 7", "2026-12-02T00:00:00Z"), "2026-12-06T00:00:00.000Z");
    // the 15th (a Tuesday) or any Friday
    assert.deepEqual(fires("0 0 15 * fri", "2026-12-02T00:00:00Z", 3), [
      "2026-12-04T00:00:00.000Z",
      "2026-12-11T00:00:00.000Z",
      "2026-12-15T00:00:00.000Z",
    ]);
  });

  it("knows the shorthands, leap days and a date that never comes", () => {
    assert.equal(next("@daily", "2026-12-02T05:00:00Z"), "2026-12-03T00:00:00.000Z");
    assert.equal(next("@hourly", "2026-12-02T05:00:00Z"), "2026-12-02T06:00:00.000Z");
    assert.equal(next("0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00.000Z");
    assert.equal(next("0 0 31 2 *", "2026-03-01T00:00:00Z"), null);
  });

  it("reads the wall clock of the time zone", () => {
    // 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer
    assert.equal(next("0 9 * * *", "2026-12-02T10:00:00Z", "Europe/Paris"), "2026-12-03T08:00:00.000Z");
    assert.equal(next("0 9 * * *", "2026-07-02T10:00:00Z", "Europe/Paris"), "2026-07-03T07:00:00.000Z");
    assert.equal(next("30 18 * * *", "2026-12-02T00:00:00Z", "America/New_York"), "2026-12-02T23:30:00.000Z");
    assert.equal(next("0 0 * * *", "2026-12-02T00:00:00Z", "Asia/Kolkata"), "2026-12-02T18:30:00.000Z");
  });

  it("fires a wall time skipped by a clock change after the jump, and a repeated one once", () => {
    // Europe/Paris 2026-03-29: 02:00 becomes 03:00 (UTC+1 to UTC+2)
    assert.equal(
      next("30 2 * * *", "2026-03-28T12:00:00Z", "Europe/Paris"),
      "2026-03-29T01:30:00.000Z", // 03:30 local, right after the jump
    );
    // Europe/Paris 2026-10-25: 03:00 becomes 02:00 again (UTC+2 to UTC+1)
    const f = fires("30 2 * * *", "2026-10-24T12:00:00Z", 2, "Europe/Paris");
    assert.equal(f.length, 2);
    assert.match(f[0]!, /^2026-10-25T0[01]:30:00.000Z$/);
    assert.equal(f[1], "2026-10-26T01:30:00.000Z");
  });

  it("refuses what it cannot read, saying which field", () => {
    for (const [expr, msg] of [
      ["* * * *", /5 fields/],
      ["60 * * * *", /minute: 60 is outside 0-59/],
      ["* 24 * * *", /hour/],
      ["* * 0 * *", /day of month/],
      ["* * * 13 *", /month/],
      ["* * * * 8", /day of week/],
      ["*/0 * * * *", /step/],
      ["5-1 * * * *", /backwards/],
      ["a * * * *", /not a number/],
      ["1,,2 * * * *", /empty/],
    ] as const)
      assert.throws(() => parseCron(expr), msg, expr);
  });

  it("knows time zones", () => {
    assert.ok(isTimeZone("UTC"));
    assert.ok(isTimeZone("Europe/Paris"));
    assert.ok(!isTimeZone("Mars/Olympus"));
  });
});
