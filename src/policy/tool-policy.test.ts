import assert from "node:assert/strict";
import { test } from "node:test";
import { readFile } from "node:fs/promises";
import { CedarEngine } from "./cedar.js";
import {
  MAX_POLICY_BYTES,
  MAX_POLICY_DEPTH,
  nestingDepth,
  policyBoundsProblem,
  TOOL_POLICY_SCHEMA,
  ToolPolicy,
  type ToolRequest,
  toolPolicyProblem,
} from "./tool-policy.js";

function req(tool: string, args: unknown = {}, kind: ToolRequest["tool"]["kind"] = "builtin"): ToolRequest {
  const server = kind === "mcp" ? tool.split("__")[0] : undefined;
  return {
    agent: { id: "ag_1", orgId: "org_1" },
    tool: { name: tool, kind, ...(server ? { server } : {}) },
    run: { id: "run_1", via: "loop" },
    arguments: args,
  };
}

test("validation: empty text is valid, and so are policies that fit the schema", async () => {
  assert.equal(await toolPolicyProblem(""), null);
  assert.equal(await toolPolicyProblem("  \n"), null);
  assert.equal(
    await toolPolicyProblem(`
      @id("read notes")
      permit(principal, action == Action::"call", resource == Tool::"read_file")
        when { context.arguments has path && context.arguments.path like "notes/*" };
      forbid(principal, action, resource in Server::"github") when { context.run.via == "gateway" };
      permit(principal is Agent, action, resource) when { resource.kind == "http" && principal.org == "org_1" };
    `),
    null,
  );
});

test("validation: bad text answers Cedar's message", async () => {
  const syntax = (await toolPolicyProblem("permit(principal, action, resource")) ?? "";
  assert.match(syntax, /unexpected end of input|expected/i);
  const unknownAttr =
    (await toolPolicyProblem(`permit(principal, action, resource) when { context.nope == 1 };`)) ?? "";
  assert.match(unknownAttr, /attribute `nope`/);
  const unknownType = (await toolPolicyProblem(`permit(principal == User::"x", action, resource);`)) ?? "";
  assert.match(unknownType, /User/);
  const unguarded =
    (await toolPolicyProblem(
      `permit(principal, action, resource) when { context.arguments.path == "x" };`,
    )) ?? "";
  assert.match(unguarded, /path/);
  const dup = await toolPolicyProblem(
    `@id("a") permit(principal, action, resource); @id("a") forbid(principal, action, resource);`,
  );
  assert.match(dup ?? "", /two policies have the id "a"/);
  const template = await toolPolicyProblem(`permit(principal == ?principal, action, resource);`);
  assert.match(template ?? "", /templates are not supported/);
});

test("decisions: an empty policy denies every call", async () => {
  const p = await ToolPolicy.compile("");
  for (const t of ["read_file", "run_command", "gh__search"]) {
    const d = await p.decide(req(t));
    assert.equal(d.decision, "deny");
    assert.deepEqual(d.policies, []);
  }
});

test("decisions: permit by tool name, with the deciding policy's id", async () => {
  const p = await ToolPolicy.compile(`
    @id("reads") permit(principal, action == Action::"call", resource == Tool::"read_file");
    permit(principal, action, resource == Tool::"list_files");
  `);
  assert.deepEqual(await p.decide(req("read_file", { path: "a" })), {
    decision: "allow",
    policies: ["reads"],
    errors: [],
  });
  assert.deepEqual((await p.decide(req("list_files"))).policies, ["policy1"]);
  const denied = await p.decide(req("write_file", { path: "a", content: "x" }));
  assert.equal(denied.decision, "deny");
  assert.deepEqual(denied.policies, []);
});

test("decisions: forbid by an argument in the context wins over a permit", async () => {
  const p = await ToolPolicy.compile(`
    @id("all") permit(principal, action, resource);
    @id("no-secrets") forbid(principal, action, resource == Tool::"read_file")
      when { context.arguments has path && context.arguments.path like "secrets/*" };
    @id("no-rm") forbid(principal, action, resource == Tool::"run_command")
      when { context.arguments_json like "*rm -rf*" };
  `);
  assert.equal((await p.decide(req("read_file", { path: "notes/a" }))).decision, "allow");
  assert.deepEqual(await p.decide(req("read_file", { path: "secrets/key" })), {
    decision: "deny",
    policies: ["no-secrets"],
    errors: [],
  });
  assert.equal((await p.decide(req("run_command", { command: "ls -la" }))).decision, "allow");
  assert.deepEqual((await p.decide(req("run_command", { command: "rm -rf /" }))).policies, ["no-rm"]);
  // An argument of another type is not typed in the context, so the guarded forbid does not
  // match; it is still in arguments_json.
  assert.equal((await p.decide(req("read_file", { path: 7 }))).decision, "allow");
});

test("decisions: MCP tools are members of their server", async () => {
  const p = await ToolPolicy.compile(`
    permit(principal, action, resource in Server::"docs");
    forbid(principal, action, resource == Tool::"docs__delete");
  `);
  assert.equal((await p.decide(req("docs__search", {}, "mcp"))).decision, "allow");
  assert.equal((await p.decide(req("docs__delete", {}, "mcp"))).decision, "deny");
  assert.equal((await p.decide(req("other__search", {}, "mcp"))).decision, "deny");
});

test("decisions: a policy that does not validate denies every call and says why", async () => {
  const p = await ToolPolicy.compile("permit(principal, action, resource) when { context.nope };");
  assert.notEqual(p.problem, null);
  const d = await p.decide(req("read_file"));
  assert.equal(d.decision, "deny");
  assert.equal(d.errors.length, 1);
});

test("decisions stay right when more policies are open than Cedar holds preparsed", async () => {
  const policies = await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      ToolPolicy.compile(`permit(principal, action, resource == Tool::"t${i}");`),
    ),
  );
  for (const [i, p] of policies.entries()) assert.equal((await p.decide(req(`t${i}`))).decision, "allow");
  // the first ones' ids were taken over meanwhile: each decides by its own text still
  for (const [i, p] of policies.entries()) {
    assert.equal((await p.decide(req(`t${i}`))).decision, "allow", `t${i}`);
    assert.equal((await p.decide(req(`t${i + 1}`))).decision, "deny", `t${i + 1}`);
  }
});

test("docs/agents.md: the schema shown is the schema used, and the worked example decides as it says", async () => {
  const md = await readFile(new URL("../../docs/agents.md", import.meta.url), "utf8");
  const blocks = [...md.matchAll(/```cedar\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  const norm = (s: string) =>
    s
      .replace(/\/\/.*$/gm, "")
      .replace(/\s+/g, "")
      .replace(/,([}\]])/g, "$1");
  assert.equal(norm(blocks[0] ?? ""), norm(TOOL_POLICY_SCHEMA));
  const example = blocks[1] ?? "";
  assert.equal(await toolPolicyProblem(example), null);
  const p = await ToolPolicy.compile(example);
  const decide = (tool: string, args: unknown) =>
    p.decide(req(tool, args, tool.includes("__") ? "mcp" : "builtin"));
  assert.deepEqual((await decide("write_file", { path: "src/main.ts" })).decision, "deny");
  assert.deepEqual((await decide("write_file", { path: "notes/a.md" })).policies, ["write-notes"]);
  assert.deepEqual((await decide("run_command", { command: "rm -rf build" })).policies, ["no-rm"]);
  assert.deepEqual((await decide("run_command", { command: "make" })).policies, ["commands"]);
  assert.deepEqual((await decide("read_file", { path: "secrets/key" })).policies, ["no-secrets"]);
  assert.deepEqual((await decide("list_files", {})).policies, ["read"]);
  assert.deepEqual((await decide("docs__search", {})).policies, ["docs"]);
  assert.deepEqual((await decide("docs__delete", {})).policies, ["no-delete"]);
});

const nested = (n: number) =>
  `permit(principal, action, resource) when { ${"(".repeat(n)}true${")".repeat(n)} };`;
/** Under both bounds (about 40 KB, no nesting), yet it overflows cedar-wasm's stack. */
const longChain = `permit(principal, action, resource) when { ${Array(5000).fill("true").join(" || ")} };`;

test("bounds: brackets are counted outside string literals (escapes included) and // comments", () => {
  assert.equal(nestingDepth(`permit(principal, action, resource) when { (true) };`), 2);
  assert.equal(nestingDepth(`permit(principal, action, resource == Tool::"(((((([[[{{{");`), 1);
  // an escaped quote does not end the literal: what follows is still inside it
  assert.equal(
    nestingDepth(`forbid(principal, action, resource) when { context.arguments_json like "*\\"((((*" };`),
    1,
  );
  // an escaped backslash does end it just before the quote
  assert.equal(nestingDepth(`@id("a\\\\") permit(principal, action, resource) when { ((true)) };`), 3);
  assert.equal(nestingDepth(`// ((((((((\npermit(principal, action, resource); // [[[[`), 1);
  // a // inside a literal is no comment
  assert.equal(nestingDepth(`permit(principal, action, resource == Tool::"//") when { ((true)) };`), 3);
  assert.equal(nestingDepth(`[{(`), 3);
  assert.equal(nestingDepth(`))) (`), 1);
});

test("bounds: too long or too deeply nested text is refused with the limit, before Cedar sees it", async () => {
  assert.equal(policyBoundsProblem(nested(MAX_POLICY_DEPTH - 2)), null);
  assert.match(
    policyBoundsProblem(nested(MAX_POLICY_DEPTH)) ?? "",
    /nests brackets 33 deep; at most 32 levels/,
  );
  const big = `permit(principal, action, resource);\n// ${"x".repeat(MAX_POLICY_BYTES)}`;
  assert.match(policyBoundsProblem(big) ?? "", /bytes; at most 65536 bytes \(64 KiB\)/);
  // the ~10 KB of parentheses that broke a shared instance: refused by the bound
  const hostile = nested(5000);
  assert.match((await toolPolicyProblem(hostile)) ?? "", /nests brackets 5001 deep/);
  const p = await ToolPolicy.compile(hostile);
  assert.match(p.problem ?? "", /at most 32 levels/);
  assert.equal((await p.decide(req("read_file"))).decision, "deny");
});

test("isolation: a policy under the bounds that breaks Cedar costs one worker; other checks and decisions go on", async () => {
  const engine = new CedarEngine({ workers: 1 });
  try {
    const sound = await ToolPolicy.compile(
      `@id("r") permit(principal, action, resource == Tool::"read_file");`,
      engine,
    );
    assert.equal(sound.problem, null);
    assert.equal((await sound.decide(req("read_file"))).decision, "allow");
    assert.equal(policyBoundsProblem(longChain), null);
    // sent together: the breaking check and, queued behind it on the one worker, innocent ones
    const [bad, good, decided] = await Promise.all([
      toolPolicyProblem(longChain, engine),
      toolPolicyProblem(`permit(principal, action, resource == Tool::"write_file");`, engine),
      sound.decide(req("read_file")),
    ]);
    assert.match(
      bad ?? "",
      /^Cedar failed on this policy \((RuntimeError|RangeError): .*\); make it smaller or simpler$/,
    );
    assert.equal(good, null);
    assert.deepEqual(decided, { decision: "allow", policies: ["r"], errors: [] });
    assert.equal(engine.replaced, 1);
    // the policy preparsed in the worker that was replaced decides in the new one
    assert.equal((await sound.decide(req("write_file"))).decision, "deny");
    assert.equal((await sound.decide(req("read_file"))).decision, "allow");
  } finally {
    await engine.close();
  }
});

test("isolation: a worker that breaks, stops or hangs during a decision denies that call, and the next one is decided", async () => {
  const engine = new CedarEngine({ workers: 1, timeoutMs: 1500 });
  try {
    const p = await ToolPolicy.compile(`@id("all") permit(principal, action, resource);`, engine);
    for (const [how, why] of [
      ["wasm", /RuntimeError: memory access out of bounds/],
      ["exit", /the worker stopped \(exit code 70\)/],
      ["hang", /it took more than 1500 ms/],
    ] as const) {
      engine.faultNext(how);
      const [failed, next] = await Promise.all([p.decide(req("read_file")), p.decide(req("read_file"))]);
      assert.equal(failed.decision, "deny", how);
      assert.deepEqual(failed.policies, [], how);
      assert.match(failed.errors.join(" "), /^Cedar failed while deciding this call and was restarted/, how);
      assert.match(failed.errors.join(" "), why, how);
      assert.deepEqual(next, { decision: "allow", policies: ["all"], errors: [] }, how);
    }
    assert.equal(engine.replaced, 3);
  } finally {
    await engine.close();
  }
});

test("a forbid that errors denies, also when the permit matches (never fails open)", async () => {
  const p = await ToolPolicy.compile(`
    @id("all") permit(principal, action, resource);
    @id("odd") forbid(principal, action, resource) when { context.arguments has path && context.arguments.path like "*" && 1 + 9223372036854775807 > 0 };
  `);
  assert.equal(p.problem, null);
  const d = await p.decide(req("read_file", { path: "a" }));
  assert.equal(d.decision, "deny");
  assert.deepEqual(d.policies, ["odd"]);
  assert.match(d.errors.join(" "), /overflow/);
});
