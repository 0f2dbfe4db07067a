// The SDKs' conformance suite: one list of cases (cases.json) run by the TypeScript SDK and by
// the Python SDK (sync and async clients, through pytest) against the same real server on
// loopback (PGlite, real boxes), its assistant on a scripted Anthropic server that streams.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { WarrenClient } from "../../src/sdk/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { scriptedAssistant } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { startFakeAnthropic, type FakeModelServer } from "../support/fake-models.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { casesPath, loadCases, runCase, type Fixture } from "./runner.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PYTHON = "/usr/bin/python3";
const OWNER = "owner@conformance.test";
const VIEWER = "viewer@conformance.test";

describe("the SDKs' conformance cases", { skip: boxSkipReason() ?? false }, () => {
  let fake: FakeModelServer;
  let t: TestServer | undefined;
  let tmp = "";
  let fixture: Fixture;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "warren-conformance-"));
    fake = await startFakeAnthropic([{ text: "Hello! The scripted model streams this answer in pieces." }]);
    t = await startTestServer({
      listen: true,
      env: { AUTH_MODE: "trusted-header", WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) },
    });
    const owner = new WarrenClient({ baseUrl: t.url ?? "", headers: { "x-forwarded-email": OWNER } });
    const org = await owner.orgs.create({ name: "conformance" });
    const machine = await owner.machines.create({ org_id: org.id, name: "m" });
    await owner.secrets.create({
      org_id: org.id,
      name: "ANTHROPIC_KEY",
      description: "",
      value: "sk-ant-conformance-5d1e",
      use: "model",
      hosts: [new URL(fake.baseUrl).host],
      grants: [{ scope: "org", id: org.id }],
    });
    const agent = await owner.agents.create({
      org_id: org.id,
      machine_id: machine.id,
      name: "helper",
      ...(scriptedAssistant(fake.baseUrl) as object),
    });
    await owner.orgs.setMember(org.id, { email: VIEWER, role: "viewer" });
    fixture = {
      base_url: t.url ?? "",
      identities: { owner: OWNER, viewer: VIEWER },
      vars: { agent: agent.id },
    };
  });

  after(async () => {
    try {
      // stops every box the server started
      await t?.close();
    } finally {
      await fake?.close();
      if (tmp) await rm(tmp, { recursive: true, force: true });
    }
  });

  test("the TypeScript SDK passes every case", async (tt) => {
    for (const c of loadCases()) await tt.test(c.name, () => runCase(c, fixture, "ts"));
  });

  test("the Python SDK passes every case, with its sync and its async client", async () => {
    const fixturePath = path.join(tmp, "fixture.json");
    await writeFile(fixturePath, JSON.stringify({ ...fixture, cases: casesPath }));
    const result = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(
        PYTHON,
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "sdk/python/tests"],
        {
          cwd: root,
          timeout: 600_000,
          env: {
            PATH: "/usr/bin:/bin",
            HOME: process.env.HOME ?? "/root",
            PYTHONPATH: path.join(root, "sdk/python"),
            PYTHONDONTWRITEBYTECODE: "1",
            WARREN_CONFORMANCE_FIXTURE: fixturePath,
          },
        },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, out: stdout + stderr }),
      );
    });
    assert.equal(result.code, 0, result.out);
    // every case ran in both clients, none skipped
    const cases = loadCases().length;
    const passed = Number(/(\d+) passed/.exec(result.out)?.[1] ?? 0);
    assert.ok(passed >= 2 * cases, `${passed} passed of ${2 * cases} cases:\n${result.out}`);
    assert.doesNotMatch(result.out, /skipped/, result.out);
  });
});
