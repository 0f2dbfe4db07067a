import assert from "node:assert/strict";
import { test } from "node:test";
import type { Machine, Run, Usage } from "../sdk/index.js";
import { exitCodeOf, exitNote } from "./commands/exec.js";
import { machineColumns, machineDetail } from "./commands/machines.js";
import { runExitCode, runView } from "./commands/runs.js";
import { usageView } from "./commands/usage.js";
import { cell, detailView, flatten, formatTable, listView, mib, short } from "./format.js";

test("formatTable aligns columns two spaces apart without trailing spaces", () => {
  assert.equal(
    formatTable(
      ["ID", "NAME", "X"],
      [
        ["org_1", "a", ""],
        ["org_22", "longer name", "y"],
      ],
    ),
    "ID      NAME         X\norg_1   a\norg_22  longer name  y\n",
  );
  assert.equal(formatTable(["A"], []), "A\n");
});

test("cells: nothing, lists, objects, numbers and control characters", () => {
  assert.equal(cell(null), "-");
  assert.equal(cell(undefined), "-");
  assert.equal(cell(""), "-");
  assert.equal(cell([]), "-");
  assert.equal(cell(["a", "b"]), "a,b");
  assert.equal(cell({ a: 1 }), '{"a":1}');
  assert.equal(cell(0), "0");
  assert.equal(cell(false), "false");
  assert.equal(cell("a\nb\tc\u001b[31m"), "a\\nb\\tc\\x1b[31m");
});

const machine: Machine = {
  id: "mch_1",
  org_id: "org_1",
  name: "m",
  state: "running",
  state_reason: "started",
  state_changed_at: "2026-01-01T00:00:00.000Z",
  max_workspace_mib: 1024,
  workspace_mib: null,
  memory_mib: 512,
  cpus: 1,
  trust: "isolated",
  agents: 2,
  reserved_mib: 512,
  unreserved_mib: 512,
  free_mib: null,
  runaway_after_s: 60,
  image: null,
  gpu: false,
  nested_engine: false,
  env_revision: 0,
  box_env_revision: null,
  created_at: "2026-01-01T00:00:00.000Z",
};

test("machineDetail: the box's usage on one line, its events one a line", () => {
  const text = machineDetail({
    ...machine,
    box: {
      state: "running",
      usage: { cpu_s: 1.25, memory_bytes: 3 * 1048576, memory_peak_bytes: 5 * 1048576, pids: 7 },
      at_limit: { limit: "pids", since: "2026-01-01T00:00:01.000Z" },
      events: [{ at: "2026-01-01T00:00:03.000Z", type: "runaway", detail: "stopped x1\u001b", data: {} }],
    },
  });
  assert.match(text, /^box\.usage +cpu 1\.3 s, memory 3\.0 MiB \(peak 5\.0 MiB\), 7 processes$/m);
  assert.match(text, /^box\.at_limit +pids since 2026-01-01T00:00:01\.000Z$/m);
  assert.match(text, /^ {2}2026-01-01T00:00:03\.000Z {2}runaway {2}stopped x1\\x1b$/m);
  assert.doesNotMatch(text, /box\.events\.0/);
});

test("listView: a table of items, or a sentence when there are none", () => {
  assert.equal(listView("machines", machineColumns, []), "no machines\n");
  assert.equal(
    listView("machines", machineColumns, [machine]),
    "ID     NAME  STATE    AGENTS  DISK        MEMORY   CPUS  TRUST\n" +
      "mch_1  m     running  2       -/1024 MiB  512 MiB  1     isolated\n",
  );
});

test("detailView flattens nested objects into aligned dotted fields", () => {
  assert.deepEqual(flatten({ a: { b: 1, c: [1, 2] }, d: {} }), [
    ["a.b", 1],
    ["a.c", [1, 2]],
    ["d", "-"],
  ]);
  assert.equal(
    detailView({ id: "x", ports: { first: 1, last: 2 }, none: null }),
    "id           x\nports.first  1\nports.last   2\nnone         -\n",
  );
  assert.equal(detailView({ id: "x", output: "o" }, ["output"]), "id  x\n");
});

test("short cuts long text with an ellipsis", () => {
  assert.equal(short("abc", 3), "abc");
  assert.equal(short("abcd", 3), "ab…");
});

test("mib, usage and runs", () => {
  assert.equal(mib(null, 10), "-/10 MiB");
  assert.equal(mib(3, 10), "3/10 MiB");
  const u: Usage = {
    workspace_mib: 1,
    max_workspace_mib: 10,
    machine: {
      id: "mch_1",
      name: "m",
      workspace_mib: 2,
      max_workspace_mib: 20,
      reserved_mib: 11,
      others_reserved_mib: 1,
      unreserved_mib: 19,
      free_mib: 18,
    },
  };
  assert.equal(usageView(u), "         USED      NAME\nagent    1/10 MiB\nmachine  2/20 MiB  m (mch_1)\n");
  const run: Run = {
    id: "run_1",
    agent_id: "agt_1",
    machine_id: "mch_1",
    kind: "command",
    status: "succeeded",
    status_reason: null,
    argv: ["echo", "hi"],
    exit_code: 0,
    signal: null,
    output: "hi",
    output_truncated: false,
    timeout_s: 60,
    created_at: "c",
    started_at: "s",
    ended_at: "e",
    receipt: null,
  };
  const view = runView(run);
  assert.match(view, /^id {16}run_1\n/);
  assert.match(view, /\nargv {14}echo,hi\n/);
  assert.ok(view.endsWith("\noutput:\nhi\n"));
  assert.ok(!runView({ ...run, output: "" }).includes("\noutput:"));
  assert.ok(runView({ ...run, output: "x\n", output_truncated: true }).endsWith("output (truncated):\nx\n"));
  assert.equal(runExitCode(run), 0);
  assert.equal(runExitCode({ ...run, status: "timed_out", exit_code: null }), 124);
  assert.equal(runExitCode({ ...run, status: "failed", exit_code: 300 }), 255);
  assert.equal(runExitCode({ ...run, status: "cancelled", exit_code: null }), 1);
});

test("exit codes: the command's, 124 on timeout, 128+n on a signal", () => {
  assert.equal(exitCodeOf({ exit_code: 3, signal: null, timed_out: false }), 3);
  assert.equal(exitCodeOf({ exit_code: 0, signal: null, timed_out: false }), 0);
  assert.equal(exitCodeOf({ exit_code: null, signal: "SIGKILL", timed_out: true }), 124);
  assert.equal(exitCodeOf({ exit_code: null, signal: "SIGKILL", timed_out: false }), 137);
  assert.equal(exitCodeOf({ exit_code: null, signal: "TERM", timed_out: false }), 143);
  assert.equal(exitCodeOf({ exit_code: null, signal: "SIGWHAT", timed_out: false }), 1);
  assert.equal(exitCodeOf({ exit_code: null, signal: null, timed_out: false }), 1);
  assert.equal(exitNote({ exit_code: 0, signal: null, timed_out: false, duration_ms: 1 }), null);
  assert.match(
    exitNote({ exit_code: null, signal: "SIGKILL", timed_out: true, duration_ms: 5 }) ?? "",
    /timed out after 5 ms/,
  );
  assert.match(
    exitNote({ exit_code: null, signal: "SIGSEGV", timed_out: false, duration_ms: 5 }) ?? "",
    /SIGSEGV/,
  );
});
