// The toolset of an agent's run as the server opens it, for the suites that call tools
// directly: the scripted assistant with the tools and policy given, each call's record kept.
import { AgentSpec } from "../../src/contract/spec.js";
import { newId } from "../../src/ids.js";
import type { ToolCallRecord, Toolset } from "../../src/tools/types.js";
import type { TestServer } from "./server.js";

/** Opens the tools of a new run of the agent; the caller closes `set`. */
export async function openToolset(
  t: TestServer,
  agentId: string,
  spec: Partial<Record<"tools" | "tool_policy", unknown>>,
  via: "loop" | "gateway" = "loop",
): Promise<{ set: Toolset; records: ToolCallRecord[]; runId: string }> {
  const records: ToolCallRecord[] = [];
  const runId = newId("run");
  const set = await t.server.tools.open({
    runId,
    via,
    workload: await t.server.workloads.openAgent(agentId, { run: { id: runId } }),
    spec: AgentSpec.parse({ kind: "assistant", model: { provider: "script", name: "s.json" }, ...spec }),
    signal: new AbortController().signal,
    record: async (rec) => {
      records.push(rec);
    },
  });
  return { set, records, runId };
}
