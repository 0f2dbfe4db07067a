import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ModelMessage } from "ai";
import { cutHistory, replayInput, wholeHistory } from "./history.js";

const call = (id: string): ModelMessage => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: id, toolName: "run_command", input: { command: "x" } }],
});
const answer = (id: string, value: string): ModelMessage => ({
  role: "tool",
  content: [
    { type: "tool-result", toolCallId: id, toolName: "run_command", output: { type: "text", value } },
  ],
});

describe("a conversation's history", () => {
  it("gives a tool call left without its answer (an interrupted turn) one that says so", () => {
    const h = wholeHistory([
      { runId: "r1", message: { role: "user", content: "go" } },
      { runId: "r1", message: call("c1") },
      { runId: "r2", message: { role: "user", content: "again" } },
    ]);
    assert.deepEqual(
      h.map((m) => m.role),
      ["user", "assistant", "tool", "user"],
    );
    assert.match(JSON.stringify(h[2]), /interrupted before this tool answered/);
  });

  it("cuts the oldest tool answers first, then whole turns oldest first, never the last turn", () => {
    const big = "y".repeat(4000);
    const h: ModelMessage[] = [
      { role: "user", content: "one" },
      call("c1"),
      answer("c1", big),
      { role: "assistant", content: "done one" },
      { role: "user", content: "two" },
      call("c2"),
      answer("c2", big),
      { role: "assistant", content: "done two" },
      { role: "user", content: "three" },
    ];
    const starts = [0, 4, 8];
    const untouched = cutHistory(h, starts, 100_000);
    assert.equal(untouched.cut, null);
    const one = cutHistory(h, starts, 5000);
    assert.ok(one.cut);
    assert.equal(one.cut.tool_answers_cut, 1, "the oldest answer was enough");
    assert.match(JSON.stringify(one.messages[2]), /cut: an old tool answer of \d+ bytes/);
    assert.ok(JSON.stringify(one.messages[6]).includes(big), "the newer answer is whole");
    const tight = cutHistory(h, starts, 300);
    assert.ok(tight.cut);
    assert.equal(tight.cut.tool_answers_cut, 2);
    assert.equal(tight.cut.turns_left_out, 2);
    assert.deepEqual(tight.messages, [{ role: "user", content: "three" }]);
  });

  it("replays the thread as text for a harness kind", () => {
    const text = replayInput(
      [
        { role: "user", content: "hi" },
        call("c1"),
        answer("c1", "out"),
        { role: "assistant", content: "hello" },
      ],
      "next",
    );
    assert.match(
      text,
      /User: hi\nAssistant: \[tool call run_command .*\]\nTool: \[tool answer run_command: out\]\nAssistant: hello/,
    );
    assert.ok(text.endsWith("next"));
    assert.equal(replayInput([], "only"), "only");
  });
});
