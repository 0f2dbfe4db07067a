// `warren artifacts ...` against a real server (trusted-header mode, PGlite): notes and a memory
// written from stdin and files, listed, read, a memory's revisions and an earlier one, and an
// access list set and shown.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { runWarren } from "../support/cli.js";
import { startTestServer, type TestServer } from "../support/server.js";

let dir = "";
let t: TestServer | undefined;

const warren = (argv: string[], stdin?: string) =>
  runWarren(argv, { url: t?.url, as: "me@example.com", stdin });

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "warren-cli-art-"));
  t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
});
after(async () => {
  try {
    await t?.close();
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
});

test("warren artifacts: put, list, get, revisions and access", async () => {
  const org = JSON.parse((await warren(["--json", "orgs", "create", "notes"])).stdout);
  const machine = JSON.parse((await warren(["--json", "machines", "create", "m", "--org", org.id])).stdout);
  const agent = JSON.parse(
    (await warren(["--json", "agents", "create", "a", "--org", org.id, "--machine", machine.id])).stdout,
  );
  assert.ok(agent.id, JSON.stringify(agent));
  const mem = `agents/${agent.id}/memory.md`;
  const put = await warren(["artifacts", "put", mem, "--org", org.id], "first");
  assert.equal(put.code, 0, put.stderr);
  assert.equal(put.stdout, `wrote ${mem} (revision 1)\n`);
  const file = path.join(dir, "m.md");
  await writeFile(file, "second");
  assert.equal((await warren(["artifacts", "put", mem, file, "--org", org.id])).code, 0);
  assert.equal((await warren(["artifacts", "get", mem, "--org", org.id])).stdout, "second");
  assert.equal((await warren(["artifacts", "get", mem, "--org", org.id, "--revision", "1"])).stdout, "first");
  const bad = await warren(["artifacts", "get", mem, "--org", org.id, "--revision", "x"]);
  assert.equal(bad.code, 2, bad.stderr);
  const revs = await warren(["artifacts", "revisions", mem, "--org", org.id]);
  assert.match(
    revs.stdout,
    /^REVISION\s+BY\s+AT\s+BYTES\n2\s+me@example.com\s+\S+\s+6\n1\s+me@example.com\s+\S+\s+5\n$/,
  );
  const list = await warren(["artifacts", "list", "--org", org.id, "--prefix", "agents/"]);
  assert.match(list.stdout, new RegExp(`${mem}\\s+memory\\s+6\\s+2`));
  const notFound = await warren(["artifacts", "get", "nothing.md", "--org", org.id]);
  assert.equal(notFound.code, 1);
  assert.match(notFound.stderr, /not_found/);

  await warren(["artifacts", "put", "handbook.md", "--org", org.id], "# Handbook");
  const set = await warren([
    "artifacts",
    "access",
    "handbook.md",
    "--org",
    org.id,
    "--grant",
    `org:${org.id}=read`,
    "--grant",
    `agent:${agent.id}=none`,
  ]);
  assert.equal(set.code, 0, set.stderr);
  const shown = await warren(["--json", "artifacts", "access", "handbook.md", "--org", org.id]);
  assert.deepEqual(JSON.parse(shown.stdout).grants, [
    { scope: "agent", id: agent.id, mode: "none" },
    { scope: "org", id: org.id, mode: "read" },
  ]);
  const wrong = await warren([
    "artifacts",
    "access",
    "handbook.md",
    "--org",
    org.id,
    "--grant",
    "team:x=read",
  ]);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--grant/);
  const cleared = await warren(["--json", "artifacts", "access", "handbook.md", "--org", org.id, "--clear"]);
  assert.deepEqual(JSON.parse(cleared.stdout).grants, []);
});
