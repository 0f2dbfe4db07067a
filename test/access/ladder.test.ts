// The role ladder as docs/api.md states it ("Who may do what"): this suite reads that table
// from the file and makes every row's call as every seat on a real server, so the docs and
// the access checks cannot drift apart. A row the suite cannot make, or a call the table
// does not name, fails it.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { waitFor } from "../conversations/support.js";
import { dbLegs } from "../support/db.js";
import { APPROVAL_POLICY, approvalAgent } from "../approvals/support.js";

const SEATS = ["owner", "admin", "editor", "editor·areas", "writer", "viewer", "auditor", "guest"] as const;
type Seat = (typeof SEATS)[number];
const EMAIL: Record<Seat, string> = {
  owner: "owner@ladder.test",
  admin: "admin@ladder.test",
  editor: "editor@ladder.test",
  "editor·areas": "fenced@ladder.test",
  writer: "writer@ladder.test",
  viewer: "viewer@ladder.test",
  auditor: "auditor@ladder.test",
  guest: "guest@ladder.test",
};
const MEMBERS = [
  { email: EMAIL.admin, role: "admin" },
  { email: EMAIL.editor, role: "editor" },
  { email: EMAIL["editor·areas"], role: "editor", areas: ["proj"] },
  { email: EMAIL.writer, role: "writer", areas: ["proj"] },
  { email: EMAIL.viewer, role: "viewer" },
  { email: EMAIL.auditor, role: "auditor" },
  { email: EMAIL.guest, role: "guest", areas: ["proj"] },
];

/** The table of docs/api.md: action → the answer each seat gets ("✓" or "403 code"). */
function ladderOfDocs(): Map<string, Record<Seat, string>> {
  const text = fs.readFileSync(path.join(import.meta.dirname, "../../docs/api.md"), "utf8");
  const at = text.indexOf("### Who may do what");
  assert.ok(at >= 0, "docs/api.md has the role table");
  const lines = text.slice(at).split("\n");
  const header = lines.find((l) => l.startsWith("| action"));
  assert.ok(header, "the table's header");
  const cells = (l: string) =>
    l
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
  assert.deepEqual(cells(header).slice(1), [...SEATS], "the table's seats");
  const rows = new Map<string, Record<Seat, string>>();
  for (const l of lines.slice(lines.indexOf(header) + 2)) {
    if (!l.startsWith("|")) break;
    const [action, ...answers] = cells(l);
    const key = /^`([a-z_.]+)`/.exec(action!)?.[1];
    assert.ok(key, `a row names its action: ${l}`);
    rows.set(key, Object.fromEntries(SEATS.map((s, i) => [s, answers[i]!.replaceAll("`", "")])) as never);
  }
  return rows;
}

type Answer = { status: number; body: any };

for (const leg of dbLegs)
  describe(
    `the role ladder, row by row against the docs, on ${leg.name}`,
    { skip: boxSkipReason() ?? leg.skip ?? false },
    () => {
      let t: TestServer;
      const as = asMember(() => t);
      let org = "";
      let agent = "";
      let machine = "";
      let persona = "";
      const approvals: Record<"nobody" | "writer", { id: string; run: string }> = {
        nobody: { id: "", run: "" },
        writer: { id: "", run: "" },
      };
      let n = 0;

      /** Each action: the call as one seat, and the status that means it was allowed. */
      const actions: Record<string, { ok: number; call: (seat: Seat) => Promise<Answer> }> = {
        "agent.read": { ok: 200, call: (s) => as(EMAIL[s])("GET", `/api/agents/${agent}`) },
        "file.read": {
          ok: 200,
          call: (s) => as(EMAIL[s])("GET", `/api/agents/${agent}/files/proj/readme.md`),
        },
        "file.read_outside": {
          ok: 200,
          call: (s) => as(EMAIL[s])("GET", `/api/agents/${agent}/files/other/secret.md`),
        },
        "file.write": { ok: 204, call: (s) => putFile(s, `proj/by-${++n}.md`) },
        "file.write_outside": { ok: 204, call: (s) => putFile(s, `other/by-${++n}.md`) },
        "conversation.start": {
          ok: 201,
          call: (s) => as(EMAIL[s])("POST", `/api/agents/${agent}/conversations`, { persona_id: persona }),
        },
        "agent.create": {
          ok: 201,
          call: (s) =>
            as(EMAIL[s])("POST", "/api/agents", { org_id: org, machine_id: machine, name: `made-${++n}` }),
        },
        "agent.change": {
          ok: 200,
          call: (s) => as(EMAIL[s])("PATCH", `/api/agents/${agent}`, { instructions: `changed ${++n}` }),
        },
        "persona.create": {
          ok: 201,
          call: (s) =>
            as(EMAIL[s])("POST", `/api/agents/${agent}/personas`, { name: `p${++n}`, area: "proj" }),
        },
        "schedule.create": {
          ok: 201,
          call: (s) =>
            as(EMAIL[s])("POST", `/api/agents/${agent}/schedules`, {
              every_s: 3600,
              kind: "command",
              argv: ["true"],
              paused: true,
            }),
        },
        exec: { ok: 200, call: (s) => as(EMAIL[s])("POST", `/api/agents/${agent}/exec`, { argv: ["true"] }) },
        "artifact.write": {
          ok: 200,
          call: async (s) => {
            const r = await t.inject({
              method: "PUT",
              url: `/api/orgs/${org}/artifacts/ladder-${++n}.md`,
              payload: "a note",
              headers: { "x-forwarded-email": EMAIL[s], "content-type": "text/markdown" },
            });
            return { status: r.statusCode, body: r.body ? r.json() : undefined };
          },
        },
        "version.promote": {
          ok: 200,
          call: (s) => as(EMAIL[s])("PUT", `/api/agents/${agent}/current`, { version: 1 }),
        },
        // allowed: past the access check, to the digest's (a wrong one: nothing is decided)
        "approval.decide": { ok: 409, call: (s) => decide(s, approvals.nobody.id) },
        "approval.decide_named": { ok: 409, call: (s) => decide(s, approvals.writer.id) },
        "secret.create": {
          ok: 201,
          call: (s) =>
            as(EMAIL[s])("POST", "/api/secrets", { org_id: org, name: `S${++n}`, value: "a-secret-value" }),
        },
        "member.set": {
          ok: 200,
          call: (s) =>
            as(EMAIL[s])("PUT", `/api/orgs/${org}/members`, {
              email: `new-${++n}@ladder.test`,
              role: "viewer",
            }),
        },
        "guardrails.set": {
          ok: 200,
          call: (s) => as(EMAIL[s])("PUT", `/api/orgs/${org}/guardrails`, { network_deny: [] }),
        },
        "usage.read": { ok: 200, call: (s) => as(EMAIL[s])("GET", `/api/orgs/${org}/usage?step=1h`) },
      };

      const putFile = async (s: Seat, p: string): Promise<Answer> => {
        const r = await t.inject({
          method: "PUT",
          url: `/api/agents/${agent}/files/${p}`,
          payload: "x",
          headers: { "x-forwarded-email": EMAIL[s], "content-type": "application/octet-stream" },
        });
        return { status: r.statusCode, body: r.body ? r.json() : undefined };
      };
      const decide = (s: Seat, id: string) =>
        as(EMAIL[s])("POST", `/api/approvals/${id}`, { decision: "deny", args_sha256: "0".repeat(64) });

      /** An agent whose write_file asks approval (naming `deciders`, or nobody); its run waits on one. */
      const waitingApproval = async (name: string, deciders?: string) => {
        const owner = as(EMAIL.owner);
        const policy = deciders
          ? APPROVAL_POLICY.replace('@approval("required")', `@approval("required") @deciders("${deciders}")`)
          : APPROVAL_POLICY;
        const a = await owner("POST", "/api/agents", {
          ...approvalAgent(org, machine, name),
          tool_policy: policy,
        });
        assert.equal(a.status, 201, JSON.stringify(a.body));
        const turns = {
          turns: [{ tool_calls: [{ name: "write_file", input: { path: "o.txt", content: "x" } }] }],
        };
        const put = await t.inject({
          method: "PUT",
          url: `/api/agents/${a.body.id}/files/turns.json`,
          payload: JSON.stringify(turns),
          headers: { "x-forwarded-email": EMAIL.owner, "content-type": "application/octet-stream" },
        });
        assert.equal(put.statusCode, 204);
        const run = await owner("POST", `/api/agents/${a.body.id}/runs`, { kind: "agent", input: "go" });
        assert.equal(run.status, 202, JSON.stringify(run.body));
        const approval = await waitFor("the run to wait for its approval", async () => {
          const list = (await owner("GET", `/api/runs/${run.body.id}/approvals`)).body.items;
          return list?.[0]?.status === "waiting" ? list[0] : undefined;
        });
        return { id: approval.id as string, run: run.body.id as string, approval };
      };

      before(async () => {
        t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
        const made = await orgWithAgent(as(EMAIL.owner), {
          org: "ladder",
          areas: { proj: ["proj"], other: ["other"] },
          members: MEMBERS,
        });
        ({ org, agent, machine } = made);
        for (const [p, text] of [
          ["proj/readme.md", "inside"],
          ["other/secret.md", "outside"],
        ] as const) {
          const r = await t.inject({
            method: "PUT",
            url: `/api/agents/${agent}/files/${p}`,
            payload: text,
            headers: { "x-forwarded-email": EMAIL.owner, "content-type": "application/octet-stream" },
          });
          assert.equal(r.statusCode, 204);
        }
        const p = await as(EMAIL.owner)("POST", `/api/agents/${agent}/personas`, {
          name: "proj",
          area: "proj",
        });
        assert.equal(p.status, 201, JSON.stringify(p.body));
        persona = p.body.id;
        const nobody = await waitingApproval("asks");
        approvals.nobody = nobody;
        assert.deepEqual(nobody.approval.deciders, []);
        const named = await waitingApproval("asks-writer", "writer");
        approvals.writer = named;
        assert.deepEqual(named.approval.deciders, ["writer"]);
      });
      after(async () => {
        for (const a of Object.values(approvals))
          if (a.run) await as(EMAIL.owner)("POST", `/api/runs/${a.run}/cancel`).catch(() => undefined);
        await t?.close();
      });

      test("a policy naming deciders it cannot have is refused when saved, saying why", async () => {
        for (const [annotations, why] of [
          ['@approval("required") @deciders("viewer")', /neither an email nor a role that decides/],
          [
            '@approval("required") @deciders("guest, dana@x.test")',
            /neither an email nor a role that decides/,
          ],
          ['@approval("required") @deciders(" , ")', /names nobody/],
          ['@deciders("dana@x.test")', /belongs beside @approval\("required"\)/],
        ] as const) {
          const r = await as(EMAIL.owner)("POST", "/api/agents", {
            ...approvalAgent(org, machine, `bad-${++n}`),
            tool_policy: `${annotations} permit(principal, action, resource);`,
          });
          assert.equal(r.status, 400, JSON.stringify(r.body));
          assert.match(r.body.error.message, why);
        }
      });

      test("every row of the table is an action this suite makes, and every action a row", () => {
        assert.deepEqual([...ladderOfDocs().keys()].sort(), Object.keys(actions).sort());
      });

      for (const [key, row] of ladderOfDocs()) {
        test(`${key}: each seat gets what the table says`, async () => {
          const action = actions[key];
          assert.ok(action, `the suite makes ${key}`);
          const wrong: string[] = [];
          for (const seat of SEATS) {
            const want = row[seat];
            const got = await action.call(seat);
            const code = got.body?.error?.code as string | undefined;
            const allowed = want === "✓";
            const fine = allowed
              ? got.status === action.ok
              : `${got.status} ${code ?? ""}`.trim() === want.replace(/\s+/g, " ").trim();
            if (!fine)
              wrong.push(
                `${seat}: the table says ${want}, the server answered ${got.status} ${code ?? ""} ${got.body?.error?.message ?? ""}`,
              );
          }
          assert.deepEqual(wrong, [], wrong.join("\n"));
        });
      }

      test("the approvals answer each seat whether it may decide, and ?mine lists only its own", async () => {
        const mine = async (s: Seat) =>
          ((await as(EMAIL[s])("GET", `/api/orgs/${org}/approvals?mine=true`)).body.items as { id: string }[])
            .map((a) => a.id)
            .sort();
        assert.deepEqual(await mine("writer"), [approvals.writer.id]);
        assert.deepEqual(await mine("editor"), [approvals.nobody.id]);
        assert.deepEqual(await mine("owner"), [approvals.nobody.id, approvals.writer.id].sort());
        assert.deepEqual(await mine("editor·areas"), []);
        const listed = (await as(EMAIL.writer)("GET", `/api/runs/${approvals.writer.run}/approvals`)).body
          .items;
        assert.equal(listed[0].may_decide, true);
        const refused = await decide("editor", approvals.writer.id);
        assert.match(
          refused.body.error.message,
          /decided by writer \(and the organisation's owners and admins\)/,
        );
      });
    },
  );
