import assert from "node:assert/strict";
import { test } from "node:test";
import type { StreamEvent } from "../../sdk/index.js";
import { Input, UsageError } from "../command.js";
import { chat } from "./chat.js";
import { threadView } from "./conversations.js";
import { TurnView } from "./turns.js";

let n = 0;
const ev = (type: string, data: unknown, run_id = "run_a"): StreamEvent => ({
  id: String(++n),
  type,
  at: undefined,
  run_id,
  data,
});

test("a turn's answer: streamed pieces, then the whole answer again adds only what is new", () => {
  const v = new TurnView("run_a");
  assert.equal(v.owns(ev("output", {}, "run_b")), false);
  const said = [
    v.step(ev("started", { kind: "assistant" })),
    v.step(ev("output", { stream: "text", data: "The notes " })),
    v.step(ev("tool_call", { tool: "read_file", decision: "allow", arguments: { path: "notes.txt" } })),
    v.step(ev("output", { stream: "text", data: "say: tea " })),
    v.step(ev("output", { stream: "stdout", data: "The notes say: tea at five." })),
    v.step(ev("message", { role: "agent", text: "The notes say: tea at five." })),
    v.step(ev("exit", { status: "succeeded", reason: null })),
  ];
  assert.equal(said.map((s) => s.answer).join(""), "The notes say: tea at five.");
  assert.equal(said[2]?.note, '  · read_file ALLOW {"path":"notes.txt"}\n');
  assert.deepEqual(said[6]?.exit, { status: "succeeded", reason: null });
  assert.equal(v.answered, true);
});

test("a tool call between two texts: each step's text once, on its own line, and the whole answer", () => {
  const v = new TurnView("run_a");
  const said = [
    v.step(ev("output", { stream: "text", data: "Let me look.", step: 1 })),
    v.step(ev("tool_call", { tool: "read_file", decision: "allow", arguments: { path: "notes.txt" } })),
    v.step(ev("output", { stream: "text", data: "The notes say: tea ", step: 2 })),
    v.step(ev("output", { stream: "text", data: "at five.", step: 2 })),
    v.step(ev("output", { stream: "stdout", data: "The notes say: tea at five." })),
    v.step(ev("message", { role: "agent", text: "The notes say: tea at five." })),
  ];
  assert.equal(said.map((s) => s.answer).join(""), "Let me look.\nThe notes say: tea at five.");
  // the last word held back until after the whole answer: the whole answer printed it
  const w = new TurnView("run_a");
  const late = [
    w.step(ev("output", { stream: "text", data: "first.", step: 1 })),
    w.step(ev("output", { stream: "text", data: "I looked ", step: 2 })),
    w.step(ev("output", { stream: "stdout", data: "I looked and found it." })),
    w.step(ev("output", { stream: "text", data: "and found it.", step: 2 })),
  ];
  assert.equal(late.map((s) => s.answer).join(""), "first.\nI looked and found it.");
  assert.equal(w.final("I looked and found it."), "");
});

test("a piece that comes after the whole answer is not printed again", () => {
  const v = new TurnView("run_a");
  const said = [
    v.step(ev("output", { stream: "text", data: "hello " })),
    v.step(ev("output", { stream: "stdout", data: "hello there" })),
    v.step(ev("output", { stream: "text", data: "there" })),
    v.step(ev("message", { role: "agent", text: "hello there" })),
  ];
  assert.equal(said.map((s) => s.answer).join(""), "hello there");
  // a short answer held back whole until the turn's end
  const w = new TurnView("run_a");
  assert.equal(w.step(ev("output", { stream: "stdout", data: "Goodbye." })).answer, "Goodbye.");
  assert.equal(w.step(ev("output", { stream: "text", data: "Goodbye." })).answer, "");
  assert.equal(w.step(ev("message", { role: "agent", text: "Goodbye." })).answer, "");
});

test("a command's output without streamed text is printed as it comes; a failed exit says why", () => {
  const v = new TurnView("run_a");
  assert.equal(v.step(ev("output", { stream: "stdout", data: "a\n" })).answer, "a\n");
  assert.equal(v.step(ev("output", { stream: "stdout", data: "b\n" })).answer, "b\n");
  assert.equal(v.step(ev("output", { stream: "stderr", data: "warn\n" })).note, "warn\n");
  assert.equal(v.step(ev("message", { role: "user", text: "hi" })).answer, "");
  assert.deepEqual(v.step(ev("exit", { status: "failed", reason: "model refused" })).exit, {
    status: "failed",
    reason: "model refused",
  });
  const denied = v.step(
    ev("tool_call", { tool: "run_command", decision: "deny", arguments: {}, error: "no policy" }),
  );
  assert.equal(denied.note, "  · run_command DENY {}: no policy\n");
});

test("chat's options: --conversation alone; --persona not empty", () => {
  const parse = (opts: Record<string, string>) =>
    "command" in chat
      ? chat.command.parse(new Input("chat", { agent: "agt_1" }, new Map(Object.entries(opts)), []))
      : null;
  assert.deepEqual(parse({ persona: "helper" }), {
    agentId: "agt_1",
    persona: "helper",
    conversationId: undefined,
    title: undefined,
  });
  assert.throws(() => parse({ conversation: "cnv_1", persona: "helper" }), UsageError);
  assert.throws(() => parse({ persona: "" }), UsageError);
});

test("a thread as text: who, when, the turn, the text indented with control characters shown", () => {
  const author = { user_id: "usr_1", email: "me@example.com", name: "me" };
  assert.equal(threadView([]), "no messages\n");
  assert.equal(
    threadView([
      { id: "msg_1", role: "user", text: "hi\nthere\u001b[2J", author, run_id: "run_1", at: "t1" },
      { id: "msg_2", role: "agent", text: "hello", author: null, run_id: "run_1", at: "t2" },
    ]),
    "me@example.com  t1  (run_1)\n  hi\n  there\\x1b[2J\n\nagent  t2  (run_1)\n  hello\n",
  );
});
