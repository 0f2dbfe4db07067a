import assert from "node:assert/strict";
import { test } from "node:test";
import type { Run, RunEvent } from "../sdk/index.js";
import { traceView } from "./commands/runs.js";

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
const ev = (id: number, ms: number, type: string, data: unknown): RunEvent => ({
  id,
  at: at(ms),
  type,
  data,
});

test("traceView: a readable timeline of an assistant run, with a summary", () => {
  const events = [
    ev(1, 0, "started", {
      kind: "assistant",
      model: "anthropic:claude-sonnet-4-5",
      spec_version: 2,
      input_bytes: 12,
      timeout_s: 600,
    }),
    ev(9, 1, "models", { candidates: ["anthropic:claude-sonnet-4-5", "openai:gpt-4o-mini"] }),
    ev(2, 3, "prompt", { system: "You are a.", user: "What is in\nfacts.txt?" }),
    ev(3, 250, "model_call", {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      status: "error",
      error: "429: slow down",
      latency_ms: 20,
    }),
    ev(4, 900, "model_call", {
      provider: "openai",
      model: "gpt-4o-mini",
      status: "ok",
      tokens_in: 120,
      tokens_out: 30,
      usd: 0.000036,
      latency_ms: 640.3,
      finish_reason: "tool-calls",
      fallback_from: { provider: "anthropic", model: "claude-sonnet-4-5", reason: "429 rate limited" },
    }),
    ev(5, 901, "completion", {
      step: 1,
      text: "Reading.",
      tool_calls: [{ id: "c1", name: "read_file", input: { path: "facts.txt" } }],
    }),
    ev(6, 950, "tool_call", {
      tool: "read_file",
      decision: "deny",
      policies: [],
      arguments: { path: "facts.txt" },
      result_bytes: 40,
      duration_ms: 1,
    }),
    ev(7, 1000, "budget", { limit: "tokens", used: 1200, max: 1000, on_limit: "stop" }),
    ev(8, 1001, "exit", { status: "failed", reason: "budget" }),
  ];
  const run = {
    status: "failed",
    usage: { tokens_in: 120, tokens_out: 30, usd: 0.000036, steps: 1, tool_calls: 1, tool_refusals: 1 },
  } as Run;
  const lines = traceView(run, events).split("\n");
  assert.equal(
    lines[0],
    "   +0.000s  started     assistant, model anthropic:claude-sonnet-4-5, spec v2, 12 B in, limit 600 s",
  );
  assert.equal(lines[1], "   +0.001s  models      anthropic:claude-sonnet-4-5, then openai:gpt-4o-mini");
  lines.splice(1, 1);
  assert.equal(lines[1], "   +0.003s  prompt      system prompt 10 chars; user: What is in facts.txt?");
  assert.equal(lines[2], "   +0.250s  model       anthropic:claude-sonnet-4-5 error  20 ms  429: slow down");
  assert.equal(
    lines[3],
    "   +0.900s  model       openai:gpt-4o-mini ok  120→30 tok  $0.000036  640 ms  tool-calls  (fallback from anthropic:claude-sonnet-4-5: 429 rate limited)",
  );
  assert.equal(lines[4], '   +0.901s  completion  step 1: Reading. → read_file {"path":"facts.txt"}');
  assert.equal(
    lines[5],
    '   +0.950s  tool        read_file DENY (no policy)  {"path":"facts.txt"}  40 B  1 ms',
  );
  assert.equal(lines[6], "   +1.000s  budget      tokens 1200 of 1000 reached: stop");
  assert.equal(lines[7], "   +1.001s  exit        failed (budget)");
  assert.equal(lines[9], "failed: 1 steps, 1 tool calls (1 refused), 120→30 tokens, $0.000036");
});
