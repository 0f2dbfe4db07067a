// Permission bundles (policy.yaml's permission_bundles): a flow contract's agent takes one, and
// its spec may ask for no tool, host or secret beyond it. A spec saved over its bundle is
// refused (400 bundle.exceeded) naming what is over; the bundle of an agent is the one its
// contract flows give it (flow_agents.bundle).
import { and, eq, isNotNull } from "drizzle-orm";
import type { AgentSpec } from "../contract/spec.js";
import { WarrenError } from "../errors.js";
import { schema, type Db } from "../store/index.js";
import type { PermissionBundle, Policy } from "./policy.js";

/** What a spec asks for, as bundles name it. */
export interface Asks {
  tools: string[];
  hosts: string[];
  secrets: string[];
}

function hostOfUrl(u: string): string | null {
  try {
    return new URL(u).host;
  } catch {
    return null;
  }
}

/** The tools, hosts and secrets a spec asks for. */
export function asksOf(spec: AgentSpec): Asks {
  const tools = spec.tools.map((t) => t.name);
  const hosts = new Set(spec.sandbox_policy.network.allow);
  const secrets = new Set<string>();
  const models = spec.model
    ? [
        spec.model,
        ...(spec.model.fallback ? [spec.model.fallback] : []),
        ...(spec.model.routes ?? []).map((r) => r.model),
      ]
    : [];
  for (const m of models) if (m.key_secret) secrets.add(m.key_secret);
  for (const t of spec.tools) {
    if (t.type === "builtin") continue;
    const h = hostOfUrl(t.type === "http" ? t.base_url : t.url);
    if (h) hosts.add(h);
    for (const s of Object.values(t.headers ?? {})) secrets.add(s);
  }
  return { tools, hosts: [...hosts].sort(), secrets: [...secrets].sort() };
}

/** Whether a bundle's host entry covers a host the spec asks for (`*.d` covers any host below d). */
function covers(entry: string, host: string): boolean {
  if (entry === host) return true;
  const bare = host.replace(/:\d+$/, "");
  if (entry === bare) return true;
  if (entry.startsWith("*.")) {
    const domain = entry.slice(1);
    const name = bare.startsWith("*.") ? bare.slice(1) : bare;
    return name.endsWith(domain) && name.length > domain.length;
  }
  return false;
}

/** What the spec asks for beyond the bundle (empty lists: within it). */
export function overBundle(bundle: PermissionBundle, spec: AgentSpec): Asks {
  const asks = asksOf(spec);
  return {
    tools: asks.tools.filter((t) => !bundle.tools.includes(t)),
    hosts: asks.hosts.filter((h) => !bundle.hosts.some((e) => covers(e, h))),
    secrets: asks.secrets.filter((s) => !bundle.secrets.includes(s)),
  };
}

const isOver = (o: Asks) => o.tools.length + o.hosts.length + o.secrets.length > 0;

/** What is over, in one line: `tools: a, b; hosts: c`. */
export function overText(o: Asks): string {
  return (["tools", "hosts", "secrets"] as const)
    .filter((k) => o[k].length > 0)
    .map((k) => `${k}: ${o[k].join(", ")}`)
    .join("; ");
}

export class Bundles {
  constructor(private readonly o: { db: Db; policy: Policy }) {}

  /** The bundles the agent's contract flows give it, by flow name. */
  async of(agentId: string): Promise<{ flow: string; bundle: string }[]> {
    return this.o.db
      .select({ flow: schema.flows.name, bundle: schema.flowAgents.bundle })
      .from(schema.flowAgents)
      .innerJoin(schema.flows, eq(schema.flows.id, schema.flowAgents.flowId))
      .where(and(eq(schema.flowAgents.agentId, agentId), isNotNull(schema.flowAgents.bundle)))
      .then((rows) => rows.flatMap((r) => (r.bundle === null ? [] : [{ flow: r.flow, bundle: r.bundle }])));
  }

  /** What a spec asks beyond the named bundle; an undeclared bundle allows nothing. */
  over(bundleName: string, spec: AgentSpec): Asks {
    const bundle = this.o.policy.bundles?.get(bundleName) ?? {
      description: "",
      tools: [],
      hosts: [],
      secrets: [],
    };
    return overBundle(bundle, spec);
  }

  /** Refuses (400 bundle.exceeded) a spec of the agent that asks for more than a bundle it takes. */
  async check(agentId: string, spec: AgentSpec): Promise<void> {
    for (const { flow, bundle } of await this.of(agentId)) {
      const over = this.over(bundle, spec);
      if (!isOver(over)) continue;
      throw new WarrenError(
        "bundle.exceeded",
        `the spec asks for more than the permission bundle "${bundle}" the agent takes in flow "${flow}": ${overText(over)}; widen the bundle in policy.yaml or ask for less`,
        { bundle, flow, over },
      );
    }
  }
}
