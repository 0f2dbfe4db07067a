// The boot checks of workspaces, in the style of src/boot/checks.ts: the policy file holds,
// every class an agent's spec names is declared (workspace_class_exists), and every agent's
// /workspace can be made at its class's scope (workspaces). Each failure names the agents,
// the classes and the fix.
import fs from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import type { Probes } from "../boot/checks.js";
import { AgentSpec } from "../contract/spec.js";
import { uidOf } from "../machines/placement.js";
import { schema, type Db } from "../store/index.js";
import type { WorkspaceLayout } from "./layout.js";
import { loadPolicy, PolicyError, type Policy } from "./policy.js";
import { agentLabels } from "./service.js";

/** The policy file, read once at boot; a file that does not hold is the `policy` check's failure. */
export function readPolicy(file: string, explicit: boolean): { policy: Policy; problem: string | null } {
  try {
    return { policy: loadPolicy(file, explicit), problem: null };
  } catch (err) {
    if (!(err instanceof PolicyError)) throw err;
    return { policy: { file, classes: new Map() }, problem: err.message };
  }
}

interface AgentClass {
  id: string;
  orgId: string;
  machineId: string;
  slot: number;
  workspaceClass: string;
}

/** Every agent whose current spec names a workspace class. */
async function agentsWithClasses(db: Db): Promise<AgentClass[]> {
  const rows = await db
    .select({
      id: schema.agents.id,
      orgId: schema.agents.orgId,
      machineId: schema.agents.machineId,
      slot: schema.agents.slot,
      specVersion: schema.agents.specVersion,
      spec: schema.agentSpecs.spec,
      version: schema.agentSpecs.version,
    })
    .from(schema.agents)
    .innerJoin(schema.agentSpecs, eq(schema.agentSpecs.agentId, schema.agents.id));
  const out: AgentClass[] = [];
  for (const r of rows) {
    if (r.version !== r.specVersion) continue;
    const spec = AgentSpec.safeParse(r.spec);
    if (!spec.success || spec.data.workspace_class === null) continue;
    out.push({ ...r, workspaceClass: spec.data.workspace_class });
  }
  return out;
}

export function workspaceProbes(o: {
  policy: { policy: Policy; problem: string | null; file: string };
  db: Db;
  layout: WorkspaceLayout;
}): Probes {
  const { policy, problem } = o.policy;
  return {
    policy: async () =>
      problem === null
        ? { ok: true, detail: policy.file ?? `${o.policy.file} (absent: no workspace class)`, fix: "" }
        : { ok: false, detail: problem, fix: `correct the policy file ${o.policy.file}` },
    workspace_class_exists: async () => {
      const unknown = (await agentsWithClasses(o.db)).filter((a) => !policy.classes.has(a.workspaceClass));
      if (unknown.length === 0)
        return { ok: true, detail: `${policy.classes.size} class(es) declared`, fix: "" };
      const named = unknown
        .slice(0, 10)
        .map((a) => `agent ${a.id} names workspace_class "${a.workspaceClass}"`)
        .join(", ");
      return {
        ok: false,
        detail: `${named}${unknown.length > 10 ? ` and ${unknown.length - 10} more` : ""}, which the policy file does not declare`,
        fix: `declare the class under workspace_classes in ${o.policy.file}, or change the agents' workspace_class`,
      };
    },
    workspaces: async () => {
      const problems: string[] = [];
      try {
        await fs.promises.mkdir(o.layout.flowsRoot, { recursive: true, mode: 0o711 });
        const probe = path.join(o.layout.flowsRoot, `.warren-probe-${process.pid}`);
        fs.writeFileSync(probe, "");
        fs.rmSync(probe);
      } catch (err) {
        problems.push(
          `flow instances' workspaces cannot be made under ${o.layout.flowsRoot}: ${(err as Error).message}`,
        );
      }
      for (const a of await agentsWithClasses(o.db)) {
        if (policy.classes.get(a.workspaceClass)?.workspace_scope !== "per-agent") continue;
        try {
          await o.layout.prepareAgent(a.machineId, a.id, uidOf(a.slot), agentLabels(a));
        } catch (err) {
          problems.push(`agent ${a.id}'s /workspace cannot be made: ${(err as Error).message}`);
        }
      }
      if (problems.length === 0) return { ok: true, detail: "every agent's /workspace can be made", fix: "" };
      return {
        ok: false,
        detail: problems.slice(0, 5).join("; "),
        fix: "make STATE_ROOT's workspaces and flows folders the server's own and writable",
      };
    },
  };
}
