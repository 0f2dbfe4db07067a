// Who reads what of an assistant run: prompts and completions are events of the run, read by
// its organisation's editors and viewers, never by an auditor (who reads the record: status,
// usage, receipt), nor by anyone outside the organisation. The loop runs in the server: no box.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";

const h = (email: string) => ({ "x-forwarded-email": email });

for (const leg of dbLegs)
  describe(`an assistant run's trace and its readers (${leg.name})`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let stateRoot = "";
    before(async () => {
      // the operator's own system.md template, in STATE_ROOT/templates
      stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-audit-"));
      await mkdir(path.join(stateRoot, "templates"));
      await writeFile(
        path.join(stateRoot, "templates", "system.md"),
        "House rules for {{agent_name}}.\n\n{{task}}\n",
      );
      t = await startTestServer({ leg, stateRoot, env: { AUTH_MODE: "trusted-header" } });
    });
    after(async () => {
      await t?.close();
      await rm(stateRoot, { recursive: true, force: true });
    });

    test("admins read prompts and completions; auditors read the record only", async () => {
      const own = h("own@x.io");
      const org = (await t.call("POST", "/api/orgs", { name: "o" }, own)).body;
      for (const [email, role] of [
        ["edit@x.io", "admin"],
        ["audit@x.io", "auditor"],
      ])
        assert.equal((await t.call("PUT", `/api/orgs/${org.id}/members`, { email, role }, own)).status, 200);
      const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" }, own)).body;
      const a = (
        await t.call(
          "POST",
          "/api/agents",
          {
            org_id: org.id,
            machine_id: m.id,
            name: "a",
            kind: "assistant",
            model: { provider: "script", name: "s.json" },
            instructions: "The secret plan is in the instructions.",
          },
          h("edit@x.io"),
        )
      ).body;
      assert.equal(a.spec_version, 1);
      // changes at the same moment each write their own version
      const patches = await Promise.all(
        ["one", "two", "three"].map((x) =>
          t.call(
            "PATCH",
            `/api/agents/${a.id}`,
            { instructions: `The secret plan is in the instructions. ${x}` },
            own,
          ),
        ),
      );
      assert.deepEqual(
        patches.map((p) => p.status),
        [200, 200, 200],
      );
      assert.deepEqual(patches.map((p) => p.body.spec_version).sort(), [2, 3, 4]);
      const back = await t.call(
        "PATCH",
        `/api/agents/${a.id}`,
        { instructions: "The secret plan is in the instructions." },
        own,
      );
      assert.equal(back.body.spec_version, 5);
      const put = await t.inject({
        method: "PUT",
        url: `/api/agents/${a.id}/files/s.json`,
        payload: JSON.stringify([{ text: "a private answer" }]),
        headers: { ...own, "content-type": "application/octet-stream" },
      });
      assert.equal(put.statusCode, 204);
      const auditorRuns = await t.call(
        "POST",
        `/api/agents/${a.id}/runs`,
        { kind: "agent", input: "x" },
        h("audit@x.io"),
      );
      assert.equal(auditorRuns.status, 403);
      const r = await t.call(
        "POST",
        `/api/agents/${a.id}/runs`,
        { kind: "agent", input: "a private question" },
        h("edit@x.io"),
      );
      assert.equal(r.status, 202, JSON.stringify(r.body));
      let run: any;
      for (let i = 0; i < 400; i++) {
        run = (await t.call("GET", `/api/runs/${r.body.id}`, undefined, h("edit@x.io"))).body;
        if (run.ended_at) break;
        await new Promise((res) => setTimeout(res, 25));
      }
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      assert.equal(run.output, "a private answer");

      const events = await t.call("GET", `/api/runs/${r.body.id}/events`, undefined, h("edit@x.io"));
      assert.equal(events.status, 200);
      const types = events.body.items.map((e: { type: string }) => e.type);
      assert.deepEqual(
        types.filter((x: string) => ["prompt", "model_call", "completion", "exit"].includes(x)),
        ["prompt", "model_call", "completion", "exit"],
      );
      // the model's text streams as outputs of stream "text" (its step named), the whole answer last
      const outputs = events.body.items
        .filter((e: { type: string }) => e.type === "output")
        .map((e: any) => e.data);
      assert.deepEqual(outputs.at(-1), { stream: "stdout", data: "a private answer" });
      const texts = outputs.slice(0, -1);
      assert.ok(
        texts.every((o: any) => o.stream === "text" && o.step === 1),
        JSON.stringify(texts),
      );
      assert.equal(texts.map((o: any) => o.data).join(""), "a private answer");
      const prompt = events.body.items.find((e: { type: string }) => e.type === "prompt").data;
      assert.equal(prompt.system, "House rules for a.\n\nThe secret plan is in the instructions.\n");
      assert.equal(prompt.user, "a private question");

      const audited = await t.call("GET", `/api/runs/${r.body.id}`, undefined, h("audit@x.io"));
      assert.equal(audited.status, 200);
      assert.equal(audited.body.output, "");
      assert.equal(audited.body.output_withheld, true);
      assert.equal(audited.body.usage.steps, 1);
      assert.equal(audited.body.receipt.steps, 1);
      assert.equal(audited.body.receipt.spec_version, 5);
      assert.deepEqual(audited.body.receipt.models, ["script:s.json"]);
      const auditedEvents = await t.call("GET", `/api/runs/${r.body.id}/events`, undefined, h("audit@x.io"));
      assert.equal(auditedEvents.status, 403);
      assert.doesNotMatch(JSON.stringify(auditedEvents.body), /private/);
      const stranger = await t.call("GET", `/api/runs/${r.body.id}/events`, undefined, h("stranger@y.io"));
      assert.equal(stranger.status, 404);
    });
  });
