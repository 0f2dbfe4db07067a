// Definitions: a machine with agents (specs, personas, schedules), areas, a flow and secrets is
// exported as YAML, imported into another organisation, and exported again: the same text.
// A bad definition is refused with a clear code and leaves nothing behind.
import assert from "node:assert/strict";
import { access, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { resolveDebian } from "../../src/machines/env-build.js";
import { waitFor } from "../conversations/support.js";
import { runWarren, warrenJson } from "../support/cli.js";
import { startTestServer, type TestServer } from "../support/server.js";

/** hello's candidate on this host (null: apt knows none here, or the host has it already). */
const hello = await resolveDebian(["hello"]).then(
  ([p]) => p?.version ?? null,
  () => null,
);

describe("machine definitions", () => {
  let t: TestServer;
  let tmp: string;
  let machine: string;
  let orgB: string;
  const ok = async (method: string, url: string, body?: unknown) => {
    const r = await t.call(method, url, body);
    assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  before(async () => {
    t = await startTestServer({ listen: true });
    tmp = await mkdtemp(path.join(os.tmpdir(), "warren-def-"));
    const orgA = (await ok("POST", "/api/orgs", { name: "defa" })).id;
    orgB = (await ok("POST", "/api/orgs", { name: "defb" })).id;
    machine = (
      await ok("POST", "/api/machines", {
        org_id: orgA,
        name: "builder",
        memory_mib: 1024,
        cpus: 0.5,
        max_workspace_mib: 4096,
        runaway_after_s: 30,
      })
    ).id;
    await ok("PUT", `/api/orgs/${orgA}/areas/docs`, { folders: ["docs", "notes"] });
    const helper = await ok("POST", "/api/agents", {
      org_id: orgA,
      machine_id: machine,
      name: "helper",
      max_workspace_mib: 1024,
      kind: "assistant",
      model: { provider: "anthropic", name: "claude-sonnet-4-5", key_secret: "ANTHROPIC_KEY" },
      instructions: "Answer briefly.",
      tools: [
        { type: "builtin", name: "run_command" },
        { type: "builtin", name: "read_file" },
      ],
      tool_policy: "permit(principal, action, resource);",
    });
    const cron = await ok("POST", "/api/agents", { org_id: orgA, machine_id: machine, name: "cron" });
    await ok("PATCH", `/api/agents/${cron.id}`, {
      sandbox_policy: { network: { allow: ["example.com:443"] } },
    });
    await ok("POST", `/api/agents/${helper.id}/personas`, {
      name: "reader",
      instructions: "Only read.",
      area: "docs",
      tools: ["read_file"],
    });
    await ok("POST", `/api/agents/${cron.id}/schedules`, {
      name: "nightly",
      cron: "0 3 * * *",
      timezone: "Europe/Paris",
      kind: "command",
      command: "echo nightly",
      overlap: "queue_one",
    });
    await ok("POST", `/api/agents/${cron.id}/schedules`, { every_s: 3600, input: "hourly", paused: true });
    await ok("POST", "/api/secrets", {
      org_id: orgA,
      name: "ANTHROPIC_KEY",
      value: "sk-value-never-exported",
      use: "model",
      grants: [{ scope: "agent", id: helper.id }],
    });
    await ok("POST", "/api/secrets", {
      org_id: orgA,
      name: "SHARED_TOKEN",
      value: "shared-value-never-exported",
      description: "for everyone",
      grants: [{ scope: "org", id: orgA }],
    });
    await ok("POST", "/api/flows", { org_id: orgA, name: "pipeline", agent_ids: [helper.id, cron.id] });
    // the organisation that imports has one of the two secrets (its own value), ungranted
    await ok("POST", "/api/secrets", {
      org_id: orgB,
      name: "ANTHROPIC_KEY",
      value: "sk-other",
      use: "model",
    });
  });
  after(async () => {
    await t.close();
    await rm(tmp, { recursive: true, force: true });
  });

  test("export → import into another organisation → export gives the same text", async () => {
    const first = await ok("GET", `/api/machines/${machine}/definition`);
    const text: string = first.text;
    assert.deepEqual(parse(text), first.definition);
    assert.doesNotMatch(text, /never-exported|sk-other/, "no secret value is in a definition");
    assert.doesNotMatch(text, /(org|mch|agt)_[0-9a-z]{6,}/, "no id is in a definition");
    const d = first.definition;
    assert.equal(d.machine.limits.memory_mib, 1024);
    assert.deepEqual(
      d.agents.map((a: any) => a.name),
      ["cron", "helper"],
    );
    assert.equal(d.agents[1].personas[0].area, "docs");
    assert.equal(d.agents[0].schedules.length, 2);
    assert.deepEqual(d.agents[0].spec.sandbox_policy.network.allow, ["example.com:443"]);
    assert.deepEqual(d.flows, [{ name: "pipeline", agents: ["cron", "helper"] }]);
    assert.deepEqual(
      d.secrets.map((s: any) => [s.name, s.grants]),
      [
        ["ANTHROPIC_KEY", [{ agent: "helper" }]],
        ["SHARED_TOKEN", [{ org: true }]],
      ],
    );

    const imported = await ok("POST", `/api/orgs/${orgB}/machines/import`, { text });
    assert.equal(imported.machine.org_id, orgB);
    assert.equal(imported.agents.length, 2);
    assert.deepEqual(imported.missing_secrets, ["SHARED_TOKEN"]);
    // the missing secret set by the organisation's owner, then the round trip is whole
    await ok("POST", "/api/secrets", {
      org_id: orgB,
      name: "SHARED_TOKEN",
      value: "b-value-of-b",
      description: "for everyone",
      grants: [{ scope: "org", id: orgB }],
    });
    const again = await ok("GET", `/api/machines/${imported.machine.id}/definition`);
    assert.equal(again.text, text);
  });

  test("the CLI: warren machines export ID prints the text; import FILE --org ID rebuilds it", async () => {
    const { code, stdout, stderr } = await runWarren(["machines", "export", machine], { url: t.url });
    assert.equal(code, 0, stderr);
    const api = await ok("GET", `/api/machines/${machine}/definition`);
    assert.equal(stdout, api.text);
    const file = path.join(tmp, "def.yaml");
    await writeFile(file, stdout);
    const r = await warrenJson(["machines", "import", file, "--org", orgB, "--name", "copy", "--json"], {
      url: t.url,
    });
    const copy = await ok("GET", `/api/machines/${r.machine.id}/definition`);
    assert.equal(copy.text, api.text.replace("name: builder", "name: copy"));
  });

  test(
    "an imported definition's packages are built on the new machine, and the round trip holds",
    { skip: hello === null ? "apt knows no hello here (run apt-get update)" : false },
    async () => {
      const revisionOf = (m: string, n: number) =>
        waitFor(
          `revision ${n} of ${m} to finish building`,
          async () => {
            const r = await ok("GET", `/api/machines/${m}/environment/revisions/${n}`);
            return r.status === "building" ? undefined : r;
          },
          300_000,
        );
      const orgA = (await ok("GET", `/api/machines/${machine}`)).org_id;
      const tools = (await ok("POST", "/api/machines", { org_id: orgA, name: "tools" })).id;
      const set = await ok("PUT", `/api/machines/${tools}/environment`, { packages: ["hello"] });
      const first = await revisionOf(tools, set.revision);
      assert.equal(first.status, "ready", first.log);
      const { text, definition } = await ok("GET", `/api/machines/${tools}/definition`);
      assert.deepEqual(definition.machine.environment.packages, [{ name: "hello", version: hello }]);

      const imported = await ok("POST", `/api/orgs/${orgB}/machines/import`, { text, name: "tools" });
      const copy = imported.machine.id;
      assert.deepEqual(imported.environment_pending, [`hello=${hello}`]);
      assert.equal(imported.environment_revision, 1, "the build started with the import");
      const env = await ok("GET", `/api/machines/${copy}/environment`);
      assert.ok(env.building === 1 || env.revision === 1, JSON.stringify(env));
      const built = await revisionOf(copy, 1);
      assert.equal(built.status, "ready", built.log);
      assert.deepEqual(built.packages, [{ name: "hello", version: hello }]);
      await access(path.join(t.stateRoot, "environments", copy, "1", "usr", "bin", "hello"));
      assert.equal((await ok("GET", `/api/machines/${copy}`)).env_revision, 1);
      assert.equal((await ok("GET", `/api/machines/${copy}/definition`)).text, text);

      // a definition naming a package that is not a Debian name is refused whole
      const bad = parse(text);
      bad.machine.environment.packages = [{ name: "-o APT::X=1", version: "1" }];
      const before = (await ok("GET", `/api/machines?org_id=${orgB}`)).items.length;
      const refused = await t.call("POST", `/api/orgs/${orgB}/machines/import`, {
        text: JSON.stringify(bad),
        name: "bad",
      });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "request.invalid");
      assert.equal((await ok("GET", `/api/machines?org_id=${orgB}`)).items.length, before);
    },
  );

  test("a bad definition is 400 request.invalid naming where, and leaves no machine", async () => {
    const before = (await ok("GET", `/api/machines?org_id=${orgB}`)).items.length;
    const notYaml = await t.call("POST", `/api/orgs/${orgB}/machines/import`, { text: "a: [" });
    assert.equal(notYaml.status, 400);
    assert.equal(notYaml.body.error.code, "request.invalid");
    const { text } = await ok("GET", `/api/machines/${machine}/definition`);
    const bad = parse(text);
    bad.agents[0].schedules[0].cron = "not a cron";
    const refused = await t.call("POST", `/api/orgs/${orgB}/machines/import`, {
      text: JSON.stringify(bad),
    });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "request.invalid");
    assert.equal((await ok("GET", `/api/machines?org_id=${orgB}`)).items.length, before);
  });
});
