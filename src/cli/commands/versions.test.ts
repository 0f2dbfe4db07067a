import assert from "node:assert/strict";
import { test } from "node:test";
import { UsageError } from "../command.js";
import { parseCli } from "../parse.js";

/** The parsed command as `{ kind: "versions.show", ...what its parse answered }`. */
const cmd = (argv: string[]): Record<string, unknown> => {
  const c = parseCli(argv, {}).command;
  if (c.kind === "help") return c;
  return { kind: c.key.replace(" ", "."), ...(c.params as object) };
};

const usage = (argv: string[], pattern: RegExp) =>
  assert.throws(
    () => parseCli(argv, {}),
    (err: unknown) => err instanceof UsageError && pattern.test(err.message),
  );

const SHA = "ab".repeat(32);

test("versions: a version number of 1 or more", () => {
  assert.deepEqual(cmd(["versions", "list", "agt_1"]), { kind: "versions.list", agentId: "agt_1" });
  assert.deepEqual(cmd(["versions", "show", "agt_1", "3"]), {
    kind: "versions.show",
    agentId: "agt_1",
    version: 3,
  });
  assert.deepEqual(cmd(["versions", "current", "agt_1", "1"]), {
    kind: "versions.current",
    agentId: "agt_1",
    version: 1,
  });
  usage(["versions", "show", "agt_1", "0"], /N must be a version number/);
  usage(["versions", "current", "agt_1", "v2"], /N must be a version number/);
});

test("canary: a version and a share strictly between 0 and 1; end takes neither", () => {
  assert.deepEqual(cmd(["canary", "set", "agt_1", "--version", "2", "--share", "0.3"]), {
    kind: "canary.set",
    agentId: "agt_1",
    version: 2,
    share: 0.3,
  });
  usage(["canary", "set", "agt_1", "--version", "2"], /--share/);
  usage(["canary", "set", "agt_1", "--version", "2", "--share", "0"], /above 0 and below 1/);
  usage(["canary", "set", "agt_1", "--version", "0", "--share", "0.5"], /--version must be a version number/);
  assert.deepEqual(cmd(["canary", "end", "agt_1"]), { kind: "canary.end", agentId: "agt_1" });
});

test("approvals: waiting by default, all or one status; a decision is allow or deny with the SHA-256", () => {
  assert.deepEqual(cmd(["approvals", "list", "org_1"]), {
    kind: "approvals.list",
    orgId: "org_1",
    status: "waiting",
  });
  assert.deepEqual(cmd(["approvals", "list", "org_1", "--status", "all"]), {
    kind: "approvals.list",
    orgId: "org_1",
    status: undefined,
  });
  usage(["approvals", "list", "org_1", "--status", "pending"], /--status must be one of/);
  assert.deepEqual(cmd(["approvals", "list", "org_1", "--mine"]), {
    kind: "approvals.list",
    orgId: "org_1",
    status: "waiting",
    mine: true,
  });
  usage(["approvals", "list", "org_1", "--mine", "--status", "all"], /--mine lists waiting approvals only/);
  assert.deepEqual(cmd(["approvals", "decide", "apr_1", "deny", "--sha256", SHA, "--message", "no"]), {
    kind: "approvals.decide",
    id: "apr_1",
    decision: "deny",
    sha: SHA,
    message: "no",
    add: false,
  });
  // an egress approval's host may join the agent's allow list, with allow only
  assert.deepEqual(cmd(["approvals", "decide", "apr_1", "allow", "--sha256", SHA, "--add-to-policy"]), {
    kind: "approvals.decide",
    id: "apr_1",
    decision: "allow",
    sha: SHA,
    message: undefined,
    add: true,
  });
  usage(
    ["approvals", "decide", "apr_1", "deny", "--sha256", SHA, "--add-to-policy"],
    /--add-to-policy goes with allow/,
  );
  usage(["approvals", "decide", "apr_1", "maybe", "--sha256", SHA], /allow or deny/);
  usage(["approvals", "decide", "apr_1", "allow", "--sha256", "abc"], /64 hex digits/);
  usage(["approvals", "decide", "apr_1", "allow"], /--sha256/);
});
