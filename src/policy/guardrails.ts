// An organisation's guardrails: a Cedar policy, written by its owners and admins, that every
// tool decision of every agent of the organisation must also pass, above the agents' own
// policies. It is read with a permit of everything beneath it, so that it narrows (its
// forbids deny) and never widens: what an agent's policy does not permit stays denied. Beside
// it: a network deny list that bounds every agent's sandbox policy (the egress proxy refuses
// what it names, whatever a policy allows), and how many days run outputs and traces are kept.
import { eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import { parseNetworkEntry } from "../contract/policy.js";
import { WarrenError } from "../errors.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";

/** The policy a guardrail is decided by: everything permitted, but what its forbids deny. */
export const guardrailPolicy = (text: string): string =>
  `@id("warren.guardrail.base") permit(principal, action, resource);\n${text}`;

export interface GuardrailsView {
  org_id: string;
  tool_policy: string;
  network_deny: string[];
  retention_days: number | null;
  updated_by: string | null;
  updated_at: string | null;
}

export class Guardrails {
  /** Each organisation's deny list, read again after any write of the guardrails (read at every hop of a fetch). */
  readonly #deny;
  readonly #toolPolicy;

  constructor(
    private readonly db: Db,
    private readonly access: Access,
    private readonly check: (text: string) => Promise<string | null>,
  ) {
    this.#deny = memo<string, readonly string[]>(db, [schema.orgGuardrails]);
    this.#toolPolicy = memo<string, string>(db, [schema.orgGuardrails]);
  }

  /**
   * The organisation's guardrail policy text ("" when it has none), as it is now: read once
   * per write of the guardrails' table (the store's change stamps), since every tool call asks.
   */
  toolPolicyOf(orgId: string): Promise<string> {
    return this.#toolPolicy.get(orgId, async () => {
      const [g] = await this.db
        .select({ toolPolicy: schema.orgGuardrails.toolPolicy })
        .from(schema.orgGuardrails)
        .where(eq(schema.orgGuardrails.orgId, orgId));
      return g?.toolPolicy ?? "";
    });
  }

  /** The organisation's network deny list ([] when it has none). */
  networkDenyOf(orgId: string): Promise<readonly string[]> {
    return this.#deny.get(orgId, async () => {
      const [g] = await this.db
        .select({ deny: schema.orgGuardrails.networkDeny })
        .from(schema.orgGuardrails)
        .where(eq(schema.orgGuardrails.orgId, orgId));
      return g?.deny ?? [];
    });
  }

  async get(who: Identity, orgId: string): Promise<GuardrailsView> {
    await this.access.require(orgId, who, "read", "organisation");
    const [g] = await this.db
      .select()
      .from(schema.orgGuardrails)
      .where(eq(schema.orgGuardrails.orgId, orgId));
    return {
      org_id: orgId,
      tool_policy: g?.toolPolicy ?? "",
      network_deny: g?.networkDeny ?? [],
      retention_days: g?.retentionDays ?? null,
      updated_by: g?.updatedBy ?? null,
      updated_at: g?.updatedAt.toISOString() ?? null,
    };
  }

  /** Writes what the body names; what it leaves out is kept. */
  async put(
    who: Identity,
    orgId: string,
    body: {
      tool_policy?: string | undefined;
      network_deny?: string[] | undefined;
      retention_days?: number | null | undefined;
    },
  ): Promise<GuardrailsView> {
    await this.access.require(orgId, who, "manage", "organisation");
    if (body.tool_policy !== undefined && body.tool_policy.trim() !== "") {
      const problem = await this.check(guardrailPolicy(body.tool_policy));
      if (problem !== null)
        throw new WarrenError("request.invalid", `tool_policy: ${problem}`, { field: "tool_policy" });
    }
    for (const [i, entry] of (body.network_deny ?? []).entries()) {
      const problem = parseNetworkEntry(entry);
      if (typeof problem === "string")
        throw new WarrenError(
          "request.invalid",
          `network_deny.${i}: ${JSON.stringify(entry)} ${problem}; write a host (example.com), a domain below (*.example.com), an address or a CIDR, with :port or not`,
          { field: `network_deny.${i}` },
        );
    }
    const row = {
      ...(body.tool_policy !== undefined ? { toolPolicy: body.tool_policy } : {}),
      ...(body.network_deny !== undefined ? { networkDeny: body.network_deny } : {}),
      ...(body.retention_days !== undefined ? { retentionDays: body.retention_days } : {}),
      updatedBy: who.email,
      updatedAt: new Date(),
    };
    await this.db
      .insert(schema.orgGuardrails)
      .values({ orgId, toolPolicy: "", ...row })
      .onConflictDoUpdate({ target: schema.orgGuardrails.orgId, set: row });
    return this.get(who, orgId);
  }
}
