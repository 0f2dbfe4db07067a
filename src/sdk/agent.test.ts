import assert from "node:assert/strict";
import { test } from "node:test";
import { execBody, execEventOf, isExecExit } from "./agent.js";
import { WarrenApiError } from "./errors.js";
import { isTerminalRunStatus } from "./runs.js";
import { homePath, seg } from "./transport.js";

test("execBody takes argv, shell text or a whole request, and drops the signal", () => {
  const signal = new AbortController().signal;
  assert.deepEqual(execBody(["ls", "-la"], { cwd: "src", signal }), { cwd: "src", argv: ["ls", "-la"] });
  assert.deepEqual(execBody("echo hi", { timeout_ms: 5 }), { timeout_ms: 5, command: "echo hi" });
  assert.deepEqual(execBody({ argv: ["true"], stdin: "x" }, { env: { A: "1" } }), {
    env: { A: "1" },
    argv: ["true"],
    stdin: "x",
  });
});

test("execEventOf: output, exit, a reported error, anything else", () => {
  assert.deepEqual(execEventOf({ stream: "stderr", data: "x" }), { stream: "stderr", data: "x" });
  const exit = execEventOf({ exit_code: 0, signal: null, duration_ms: 3, timed_out: false });
  assert.ok(isExecExit(exit));
  assert.equal(isExecExit({ stream: "stdout", data: "" }), false);
  assert.throws(
    () => execEventOf({ error: { code: "internal", message: "boom" } }),
    (e: unknown) => e instanceof WarrenApiError && e.code === "internal" && e.message === "boom",
  );
  for (const bad of [null, 1, { stream: "other", data: "x" }, { stream: "stdout" }]) {
    assert.throws(
      () => execEventOf(bad),
      (e: unknown) => e instanceof WarrenApiError && e.code === "response.invalid",
    );
  }
});

test("ids are encoded as one segment; empty and dot ids are refused before any request", () => {
  assert.equal(seg("agt_1"), "agt_1");
  assert.equal(seg("a/b?c#d"), "a%2Fb%3Fc%23d");
  for (const bad of ["", ".", ".."])
    assert.throws(
      () => seg(bad),
      (e: unknown) => e instanceof WarrenApiError && e.code === "request.invalid",
    );
});

test("home paths keep their slashes, unless dot segments would be resolved by URL parsing", () => {
  assert.equal(homePath("notes/a b.txt"), "notes/a%20b.txt");
  assert.equal(homePath("/home/agt_1/x"), "/home/agt_1/x");
  assert.equal(homePath("100%/#?"), "100%25/%23%3F");
  assert.equal(homePath("../../etc/passwd"), "..%2F..%2Fetc%2Fpasswd");
  assert.equal(homePath("a/./b"), "a%2F.%2Fb");
});

test("terminal run statuses", () => {
  for (const s of ["succeeded", "failed", "timed_out", "cancelled", "lost"] as const)
    assert.equal(isTerminalRunStatus(s), true);
  for (const s of ["queued", "running"] as const) assert.equal(isTerminalRunStatus(s), false);
});
