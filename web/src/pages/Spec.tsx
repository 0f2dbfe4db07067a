// The agent spec: what the agent is (kind), its model, instructions, tools, tool policy and
// run limits. Shown on the Overview; edited in Settings (a change makes a new spec version).
import { useState } from "react";
import { AGENT_KINDS, type Agent, type AgentKind, type AgentUpdateRequest } from "warren/sdk";

export function SpecView({ agent }: { agent: Agent }) {
  return (
    <>
      <h2>Spec</h2>
      <dl className="spec" data-testid="spec">
        <dt>Kind</dt>
        <dd>{agent.kind}</dd>
        <dt>Version</dt>
        <dd>{agent.spec_version ?? "none yet"}</dd>
        <dt>Model</dt>
        <dd>
          {agent.model ? (
            <>
              {agent.model.provider} <code>{agent.model.name}</code>
              {agent.model.key_secret && (
                <>
                  {" "}
                  · key from secret <code>{agent.model.key_secret}</code>
                </>
              )}
              {agent.model.fallback && (
                <>
                  {" "}
                  · fallback {agent.model.fallback.provider} <code>{agent.model.fallback.name}</code>
                </>
              )}
            </>
          ) : (
            "none"
          )}
        </dd>
        <dt>Tools</dt>
        <dd>{agent.tools.length ? agent.tools.map((t) => `${t.name} (${t.type})`).join(", ") : "none"}</dd>
        <dt>Tool policy</dt>
        <dd>
          {agent.tool_policy.trim()
            ? `${agent.tool_policy.split("\n").length} lines of Cedar`
            : "empty: every tool call is denied"}
        </dd>
        <dt>Limits</dt>
        <dd>
          {agent.limits.max_run_s} s a run
          {agent.limits.max_tokens !== undefined && `, ${agent.limits.max_tokens} tokens`}
          {agent.limits.max_usd !== undefined && `, $${agent.limits.max_usd}`}; on a limit:{" "}
          {agent.limits.on_limit}
        </dd>
      </dl>
      {agent.instructions && (
        <>
          <h2>Instructions</h2>
          <pre className="env">{agent.instructions}</pre>
        </>
      )}
    </>
  );
}

/** The spec's form; `patch()` answers only the fields that changed (none: no new version). */
export function useSpecForm(agent: Agent) {
  const [kind, setKind] = useState<AgentKind>(agent.kind);
  const [model, setModel] = useState(agent.model ? JSON.stringify(agent.model, null, 2) : "");
  const [instructions, setInstructions] = useState(agent.instructions);
  const [tools, setTools] = useState(JSON.stringify(agent.tools, null, 2));
  const [policy, setPolicy] = useState(agent.tool_policy);
  const [maxRunS, setMaxRunS] = useState(agent.limits.max_run_s);
  const [onLimit, setOnLimit] = useState(agent.limits.on_limit);

  function patch(): AgentUpdateRequest {
    const out: AgentUpdateRequest = {};
    if (kind !== agent.kind) out.kind = kind;
    const modelNow = model.trim() ? (JSON.parse(model) as AgentUpdateRequest["model"]) : null;
    if (JSON.stringify(modelNow) !== JSON.stringify(agent.model)) out.model = modelNow;
    if (instructions !== agent.instructions) out.instructions = instructions;
    const toolsNow = JSON.parse(tools.trim() || "[]") as AgentUpdateRequest["tools"];
    if (JSON.stringify(toolsNow) !== JSON.stringify(agent.tools)) out.tools = toolsNow;
    if (policy !== agent.tool_policy) out.tool_policy = policy;
    if (maxRunS !== agent.limits.max_run_s || onLimit !== agent.limits.on_limit)
      out.limits = { ...agent.limits, max_run_s: maxRunS, on_limit: onLimit };
    return out;
  }

  function fields(disabled: boolean) {
    return (
      <>
        <h2>Spec</h2>
        <p className="sub">
          What the agent is and does. A change makes a new version (now {agent.spec_version ?? "none"}); runs
          keep the version they started with.
        </p>
        <div className="cols">
          <label>
            Kind
            <select
              name="spec_kind"
              value={kind}
              onChange={(e) => setKind(e.target.value as AgentKind)}
              disabled={disabled}
            >
              {AGENT_KINDS.map((k) => (
                <option key={k}>{k}</option>
              ))}
            </select>
          </label>
          <label>
            Longest run (s)
            <input
              name="spec_max_run_s"
              type="number"
              min={1}
              value={maxRunS}
              onChange={(e) => setMaxRunS(Number(e.target.value))}
              disabled={disabled}
            />
          </label>
          <label>
            On a limit
            <select
              name="spec_on_limit"
              value={onLimit}
              onChange={(e) => setOnLimit(e.target.value as "stop" | "finish")}
              disabled={disabled}
            >
              <option value="stop">stop the run</option>
              <option value="finish">finish without tools</option>
            </select>
          </label>
        </div>
        <label>
          Model (JSON: provider, name, base_url?, key_secret?, fallback?)
          <textarea
            name="spec_model"
            rows={4}
            value={model}
            onChange={(e) => setModel(e.target.value)}
            disabled={disabled}
            placeholder='{"provider": "anthropic", "name": "claude-sonnet-4-5", "key_secret": "ANTHROPIC_API_KEY"}'
          />
        </label>
        <label>
          Instructions (Markdown)
          <textarea
            name="spec_instructions"
            rows={5}
            value={instructions}
            onChange={(e) => setInstructions(e.target.value)}
            disabled={disabled}
          />
        </label>
        <label>
          Tools (JSON, at most 16)
          <textarea
            name="spec_tools"
            rows={4}
            value={tools}
            onChange={(e) => setTools(e.target.value)}
            disabled={disabled}
          />
        </label>
        <label>
          Tool policy (Cedar; empty: every call denied)
          <textarea
            name="spec_tool_policy"
            rows={4}
            value={policy}
            onChange={(e) => setPolicy(e.target.value)}
            disabled={disabled}
          />
        </label>
      </>
    );
  }
  return { patch, fields };
}
