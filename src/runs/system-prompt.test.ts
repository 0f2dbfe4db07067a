import assert from "node:assert/strict";
import { test } from "node:test";
import { renderSystemPrompt, SYSTEM_TEMPLATE } from "./system-prompt.js";

const values = {
  agent_name: "notes",
  agent_id: "agt_0000000000000001",
  home: "/home/agt_0000000000000001",
  date: "2026-12-01",
  task: "Keep {{agent_name}}'s notes; memory says: {{memory}}; {{unknown}} stays; {{task}} too.",
  memory: "tea at five",
};

test("the system prompt: the template with the agent, its task (its own places filled) and its memory", () => {
  const p = renderSystemPrompt(SYSTEM_TEMPLATE, values);
  assert.match(
    p,
    /^You are notes, an agent of warren \(id agt_0000000000000001\)\. Your home is \/home\/agt_0000000000000001/,
  );
  assert.match(p, /Today is 2026-12-01\./);
  assert.match(
    p,
    /# Your task\n\nKeep notes's notes; memory says: tea at five; \{\{unknown\}\} stays; \{\{task\}\} too\.\n/,
  );
  assert.match(p, /# Your memory\n\ntea at five\n/);
  // a value's own braces are never filled again
  assert.equal(renderSystemPrompt("{{memory}}", { ...values, memory: "{{agent_id}}" }), "{{agent_id}}");
  assert.equal(renderSystemPrompt("{{ agent_name }}!", values), "notes!");
});
