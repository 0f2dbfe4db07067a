// A machine's environment on real boxes: an agent proposes ripgrep (GNU hello where the host
// has rg) through env_propose, an owner approves, and the next turn of the same running box
// finds it on its PATH while the
// turn before the approval did not; a refused proposal builds nothing; a build that fails (a
// package version that does not exist) leaves the machine on its last good revision, its log
// kept. Capabilities a host cannot give are refused when a machine is saved.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { gpuDevices } from "../../src/boxes/index.js";
import { resolveDebian } from "../../src/machines/env-build.js";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

/**
 * The package the agent proposes: ripgrep, as the issue says, unless this host has `rg` already
 * (the bench installs it for sandbox-runtime; the box sees the host's /usr, so the layer would
 * add nothing), then GNU hello. Each with its program and what its --version prints.
 */
const PACKAGES = [
  { name: "ripgrep", program: "rg", prints: /ripgrep \d+\./ },
  { name: "hello", program: "hello", prints: /hello \(GNU Hello\)/ },
];
const onHost = (program: string): boolean => {
  try {
    execFileSync("sh", ["-c", `command -v ${program}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const pkg = PACKAGES.find((p) => !onHost(p.program));
/** Its candidate version on this host as the server resolves it (null: apt knows none). */
const candidate = pkg
  ? await resolveDebian([pkg.name]).then(
      ([p]) => p?.version ?? null,
      () => null,
    )
  : null;
const skip =
  boxSkipReason() ??
  (pkg === undefined ? "every candidate package is installed on the host: a layer would be empty" : null) ??
  (candidate === null ? `apt knows no ${pkg?.name ?? "package"} here (run apt-get update)` : null);
const PKG = pkg?.name ?? "ripgrep";
const BIN = pkg?.program ?? "rg";
const PRINTS = pkg?.prints ?? /./;

describe("a machine's environment grows by proposals", { skip: skip ?? false }, () => {
  let t: TestServer;
  let machine: string;
  let agent: string;
  const call = (m: string, u: string, b?: unknown) => t.call(m, u, b);
  const exec = async (command: string) => {
    const r = await call("POST", `/api/agents/${agent}/exec`, { command });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { exit_code: number; stdout: string; stderr: string };
  };
  const revision = (n: number) =>
    waitFor(
      `revision ${n} to finish building`,
      async () => {
        const r = (await call("GET", `/api/machines/${machine}/environment/revisions/${n}`)).body;
        return r.status === "building" ? undefined : r;
      },
      600_000,
    );
  /** A turn of the agent that runs one command with run_command; answers the tool's result. */
  const turn = async (command: string): Promise<string> => {
    const turns = [{ tool_calls: [{ name: "run_command", input: { command } }] }, { text: "ran it" }];
    await putHomeFile(t, agent, "turns.json", JSON.stringify({ turns }));
    const { run, events } = await runAgent(t, agent, "run it");
    assert.equal(run.status, "succeeded", JSON.stringify(events).slice(0, 3000));
    return JSON.stringify(eventsOfType(events, "tool_call"));
  };

  before(async () => {
    t = await startTestServer({ env: { BOX_IDLE_S: "3600" } });
    ({ machine, agent } = await orgWithAgent(call, { tools: ["env_propose", "run_command"] }));
  });
  after(async () => {
    await t?.close();
  });

  test("a capability the host cannot give is refused when the machine is saved", async () => {
    const org = (await call("GET", `/api/machines/${machine}`)).body.org_id as string;
    if (gpuDevices().length === 0) {
      const gpu = await call("POST", "/api/machines", { org_id: org, name: "g", gpu: true });
      assert.equal(gpu.status, 400, JSON.stringify(gpu.body));
      assert.equal(gpu.body.error.code, "machine.capability_unavailable");
      assert.match(gpu.body.error.message, /no GPU/);
      const patched = await call("PATCH", `/api/machines/${machine}`, { gpu: true });
      assert.equal(patched.body.error.code, "machine.capability_unavailable");
    }
    const nested = await call("PATCH", `/api/machines/${machine}`, { nested_engine: true });
    assert.equal(nested.status, 400, JSON.stringify(nested.body));
    assert.equal(nested.body.error.code, "machine.capability_unavailable");
    assert.match(nested.body.error.message, /strict profile/);
    if (t.server.provider.name === "local") {
      const img = await call("PATCH", `/api/machines/${machine}`, { image: "localhost/tools:1" });
      assert.equal(img.body.error.code, "machine.capability_unavailable");
      assert.match(img.body.error.message, /oci or kubernetes/);
    }
    const m = (await call("GET", `/api/machines/${machine}`)).body;
    assert.equal(m.gpu, false);
    assert.equal(m.nested_engine, false);
  });

  test("proposed by the agent, approved by the owner: the same box's next turn runs the program", async () => {
    // a turn before anything: the box starts on the base alone
    const before = await turn(`${BIN} --version; echo exit=$?`);
    assert.match(before, /exit=127/, `no ${BIN} before the approval`);
    let m = (await call("GET", `/api/machines/${machine}`)).body;
    assert.equal(m.env_revision, 0);
    assert.equal(m.box_env_revision, 0, "the box records the revision it started with");
    const startedAt = m.state_changed_at as string;

    const turns = [
      { tool_calls: [{ name: "env_propose", input: { packages: [PKG], why: "to search code" } }] },
      { text: "proposed" },
    ];
    await putHomeFile(t, agent, "turns.json", JSON.stringify({ turns }));
    const proposed = await runAgent(t, agent, "propose");
    assert.equal(proposed.run.status, "succeeded");
    assert.match(JSON.stringify(eventsOfType(proposed.events, "tool_call")), /pending/);
    const list = (await call("GET", `/api/machines/${machine}/environment/proposals?state=pending`)).body
      .items;
    assert.equal(list.length, 1);
    const p = list[0];
    assert.equal(p.agent_id, agent);
    assert.deepEqual(p.packages, [{ name: PKG, version: candidate }], "exact package and version");
    assert.equal(p.why, "to search code");
    assert.equal((await call("GET", `/api/machines/${machine}/environment`)).body.pending_proposals, 1);

    // never applied silently: nothing built until decided
    assert.equal((await call("GET", `/api/machines/${machine}/environment/revisions`)).body.items.length, 0);
    assert.match(await turn(`${BIN} --version; echo exit=$?`), /exit=127/);

    const ok = await call("POST", `/api/machines/${machine}/environment/proposals/${p.id}/decide`, {
      decision: "approve",
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.state, "approved");
    assert.equal(ok.body.revision, 1);
    const again = await call("POST", `/api/machines/${machine}/environment/proposals/${p.id}/decide`, {
      decision: "refuse",
    });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "env.proposal_decided");
    const built = await revision(1);
    assert.equal(built.status, "ready", built.log);
    assert.match(built.log, new RegExp(PKG));

    const after = await turn(`${BIN} --version; echo exit=$?`);
    assert.match(after, PRINTS, `the next turn finds ${BIN} on its PATH`);
    m = (await call("GET", `/api/machines/${machine}`)).body;
    assert.equal(m.state_changed_at, startedAt, "the same box, not started again");
    assert.equal(m.env_revision, 1);
    assert.equal(m.box_env_revision, 1);
    const env = (await call("GET", `/api/machines/${machine}/environment`)).body;
    assert.deepEqual(env.packages, [{ name: PKG, version: candidate }]);
    assert.equal(env.base, "host");
    // the layer is read-only in the box
    const write = await exec(`touch /opt/warren/env/${machine}/1/x; echo exit=$?`);
    assert.doesNotMatch(write.stdout, /exit=0/);
  });

  test("a refused proposal builds nothing; a failed build leaves the last good revision running", async () => {
    const proposed = await call("POST", `/api/machines/${machine}/environment/proposals`, {
      packages: ["fd-find"],
      why: "find files",
    });
    assert.equal(proposed.status, 201, JSON.stringify(proposed.body));
    const refused = await call(
      "POST",
      `/api/machines/${machine}/environment/proposals/${proposed.body.id}/decide`,
      { decision: "refuse" },
    );
    assert.equal(refused.body.state, "refused");
    assert.equal(refused.body.revision, null);
    assert.equal((await call("GET", `/api/machines/${machine}`)).body.env_revision, 1);

    const unknown = await call("POST", `/api/machines/${machine}/environment/proposals`, {
      packages: ["warren-no-such-package"],
      why: "nothing",
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.code, "env.package_unknown");

    const set = await call("PUT", `/api/machines/${machine}/environment`, {
      packages: [PKG, "warren-no-such-package=1.0"],
    });
    assert.equal(set.status, 202, JSON.stringify(set.body));
    assert.equal(set.body.revision, 2);
    const failed = await revision(2);
    assert.equal(failed.status, "failed");
    assert.match(failed.log, /warren-no-such-package/);
    assert.match(failed.log, /build failed/);
    const m = (await call("GET", `/api/machines/${machine}`)).body;
    assert.equal(m.env_revision, 1, "still on its last good revision");
    const still = await exec(`${BIN} --version`);
    assert.equal(still.exit_code, 0, still.stderr);
    assert.match(still.stdout, PRINTS);
  });
});
