// Evidence packs on both databases: made by an auditor (an editor may not), downloaded as
// gzipped JSON Lines chained by SHA-256 with a manifest; `warren evidence verify` passes the
// pack as made and fails it with a line edited, removed or moved.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import { createHash } from "node:crypto";
import { runWarren } from "../support/cli.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { asMember } from "../support/org.js";

const OWNER = "owner@example.com";
const AUDITOR = "auditor@example.com";
const EDITOR = "editor@example.com";

for (const leg of dbLegs) {
  describe(`evidence packs on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let dir: string;
    let org: string;
    let agent: string;
    const as = asMember(() => t);

    const verify = async (file: string, extra: string[] = []) => {
      const r = await runWarren(["evidence", "verify", file, ...extra]);
      return { code: r.code, out: r.output };
    };

    before(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), "warren-evidence-"));
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      const owner = as(OWNER);
      org = (await owner("POST", "/api/orgs", { name: "acme" })).body.id;
      const m = (await owner("POST", "/api/machines", { org_id: org, name: "m" })).body;
      agent = (
        await owner("POST", "/api/agents", { org_id: org, machine_id: m.id, name: "a", instructions: "one" })
      ).body.id;
      assert.equal((await owner("PATCH", `/api/agents/${agent}`, { instructions: "two" })).status, 200);
      // an editor holds at least one area
      assert.equal((await owner("PUT", `/api/orgs/${org}/areas/work`, { folders: ["work"] })).status, 200);
      for (const [email, role] of [
        [AUDITOR, "auditor"],
        [EDITOR, "editor"],
      ]) {
        const r = await owner("PUT", `/api/orgs/${org}/members`, {
          email,
          role,
          ...(role === "editor" ? { areas: ["work"] } : {}),
        });
        assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
      }
      // the organisation's guardrails and budgets, which a pack carries
      const g = await owner("PUT", `/api/orgs/${org}/guardrails`, {
        network_deny: ["blocked.example", "10.9.0.0/16"],
        retention_days: 90,
      });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const b = await owner("PUT", `/api/orgs/${org}/budgets`, {
        items: [
          { period: "day", max_usd: 5 },
          { agent_id: agent, period: "month", max_tokens: 1_000_000 },
        ],
      });
      assert.equal(b.status, 200, JSON.stringify(b.body));
    });
    after(async () => {
      await t?.close();
      await rm(dir, { recursive: true, force: true });
    });

    test("an auditor makes and downloads a pack that verifies; an edited, removed or moved line fails", async () => {
      const period = {
        from: new Date(Date.now() - 3600_000).toISOString(),
        to: new Date(Date.now() + 60_000).toISOString(),
      };
      const denied = await as(EDITOR)("POST", `/api/orgs/${org}/evidence`, period);
      assert.equal(denied.status, 403);
      assert.equal(denied.body.error.code, "access.denied");
      const made = await as(AUDITOR)("POST", `/api/orgs/${org}/evidence`, period);
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const got = await t.inject({
        method: "GET",
        url: `/api/evidence/${made.body.id}`,
        headers: { "x-forwarded-email": AUDITOR },
      });
      assert.equal(got.statusCode, 200);
      assert.equal(got.headers["content-type"], "application/gzip");
      const gz = got.rawPayload;
      assert.equal(gz.length, made.body.bytes);
      assert.equal(createHash("sha256").update(gz).digest("hex"), made.body.sha256);

      const lines = gunzipSync(gz).toString("utf8").trimEnd().split("\n");
      const parsed = lines.map((l) => JSON.parse(l));
      assert.deepEqual(
        parsed.map((p) => p.type),
        ["header", "agent", "version", "version", "guardrails", "budget", "budget", "manifest"],
      );
      assert.deepEqual(parsed[4].data.network_deny, ["blocked.example", "10.9.0.0/16"]);
      assert.equal(parsed[4].data.retention_days, 90);
      assert.equal(parsed[4].data.updated_by, OWNER);
      assert.deepEqual(
        [parsed[5].data, parsed[6].data].map((d) => [d.agent_id, d.period, d.max_usd, d.max_tokens]),
        [
          [null, "day", 5, null],
          [agent, "month", null, 1_000_000],
        ],
      );
      assert.equal(parsed[3].data.version, 2);
      assert.deepEqual(parsed[3].data.diff.instructions, { before: "one", after: "two" });
      assert.equal(parsed[3].data.created_by, OWNER);
      assert.ok(!lines.some((l) => l.includes('"output"')), "no outputs in a pack");

      const file = path.join(dir, "pack.jsonl.gz");
      await writeFile(file, gz);
      const ok = await verify(file, ["--sha256", made.body.sha256]);
      assert.equal(ok.code, 0, ok.out);
      assert.match(ok.out, /verified/);

      const tampered = async (name: string, edit: (l: string[]) => string[]) => {
        const f = path.join(dir, name);
        await writeFile(f, gzipSync(Buffer.from(`${edit([...lines]).join("\n")}\n`)));
        return verify(f);
      };
      const edited = await tampered("edited.gz", (l) => {
        l[3] = l[3]!.replace('"two"', '"TWO"');
        return l;
      });
      assert.equal(edited.code, 1, edited.out);
      assert.match(edited.out, /line 4: its SHA-256 is not the manifest's/);
      const removed = await tampered("removed.gz", (l) => [...l.slice(0, 2), ...l.slice(3)]);
      assert.equal(removed.code, 1);
      assert.match(removed.out, /chain is broken|manifest lists/);
      const moved = await tampered("moved.gz", (l) => [l[0]!, l[2]!, l[1]!, ...l.slice(3)]);
      assert.equal(moved.code, 1);
      // a guardrail or a budget edited after the fact (a deny entry dropped, a limit raised)
      const guardrail = await tampered("guardrail.gz", (l) => {
        l[4] = l[4]!.replace(',"10.9.0.0/16"', "");
        return l;
      });
      assert.equal(guardrail.code, 1, guardrail.out);
      assert.match(guardrail.out, /line 5: its SHA-256 is not the manifest's/);
      const budget = await tampered("budget.gz", (l) => {
        l[5] = l[5]!.replace('"max_usd":5', '"max_usd":500');
        return l;
      });
      assert.equal(budget.code, 1, budget.out);
      assert.match(budget.out, /line 6: its SHA-256 is not the manifest's/);
      const wrongDigest = await verify(file, ["--sha256", "0".repeat(64)]);
      assert.equal(wrongDigest.code, 1);
    });
  });
}
