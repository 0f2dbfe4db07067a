import assert from "node:assert/strict";
import { test } from "node:test";
import { resolveAccess, type AccessRow } from "./access.js";

const agent = { id: "agt_a", orgId: "org_o", guildIds: ["gld_g", "gld_h"] };
const row = (scope: AccessRow["scope"], subjectId: string, mode: AccessRow["mode"]): AccessRow => ({
  scope,
  subjectId,
  mode,
});

test("no row is no access", () => {
  assert.equal(resolveAccess([], agent), "none");
  // rows for others do not reach it
  assert.equal(
    resolveAccess(
      [row("agent", "agt_b", "write"), row("guild", "gld_x", "write"), row("org", "org_p", "write")],
      agent,
    ),
    "none",
  );
});

test("the agent's own row wins, and may be none", () => {
  assert.equal(resolveAccess([row("guild", "gld_g", "write"), row("agent", "agt_a", "none")], agent), "none");
  assert.equal(resolveAccess([row("org", "org_o", "write"), row("agent", "agt_a", "read")], agent), "read");
  assert.equal(resolveAccess([row("org", "org_o", "none"), row("agent", "agt_a", "write")], agent), "write");
});

test("otherwise the better of its guilds' and the organisation's rows", () => {
  assert.equal(resolveAccess([row("guild", "gld_g", "none"), row("org", "org_o", "read")], agent), "read");
  assert.equal(resolveAccess([row("guild", "gld_g", "write"), row("org", "org_o", "read")], agent), "write");
  assert.equal(
    resolveAccess([row("guild", "gld_g", "read"), row("guild", "gld_h", "write")], agent),
    "write",
  );
  assert.equal(resolveAccess([row("org", "org_o", "read")], agent), "read");
  assert.equal(resolveAccess([row("guild", "gld_h", "none")], agent), "none");
});
