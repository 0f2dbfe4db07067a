// Personas: a named narrowing of an agent for its conversations. A persona keeps a subset of
// the agent's tools and of the secrets that reach it, adds instructions, and names the area it
// is homed in. It is checked against the agent when it is made (a name the agent lacks is
// refused), and applied again at every turn against the agent as it is then: an intersection,
// so that it never widens anything, even after the agent changed.
import { and, asc, eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { Persona, PersonaCreateRequest } from "../contract/types.js";
import type { AgentSpec } from "../contract/spec.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Secrets } from "../secrets/service.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

export type PersonaRow = typeof schema.personas.$inferSelect;

export interface PersonasOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load" | "specOf">;
  secrets: Pick<Secrets, "resolve">;
}

/** A tool's name in a spec: the name the persona keeps it by. */
export const toolNameOf = (t: AgentSpec["tools"][number]): string => t.name;

export function personaView(p: PersonaRow): Persona {
  return {
    id: p.id,
    agent_id: p.agentId,
    name: p.name,
    instructions: p.instructions,
    area: p.area,
    tools: p.tools ?? null,
    secrets: p.secrets ?? null,
    created_at: p.createdAt.toISOString(),
  };
}

/** The agent's spec as a persona narrows it: fewer tools, more instructions. */
export function narrowSpec(spec: AgentSpec, p: PersonaRow | null): AgentSpec {
  if (!p) return spec;
  const keep = p.tools ? new Set(p.tools) : null;
  const tools = keep ? spec.tools.filter((t) => keep.has(toolNameOf(t))) : spec.tools;
  const extra = p.instructions.trim();
  const instructions = extra ? `${spec.instructions.trim()}\n\n${extra}`.trim() : spec.instructions;
  return { ...spec, tools, instructions };
}

export class Personas {
  constructor(private readonly o: PersonasOptions) {}

  async create(who: Identity, agentId: string, body: PersonaCreateRequest): Promise<Persona> {
    const o = this.o;
    const agent = await o.agents.load(who, agentId, "write");
    const { spec } = await o.agents.specOf(agent);
    const have = new Set(spec.tools.map(toolNameOf));
    const badTool = (body.tools ?? []).find((t) => !have.has(t));
    if (badTool !== undefined)
      throw new WarrenError(
        "request.invalid",
        `tools: the agent has no tool ${badTool} (it has: ${[...have].join(", ") || "none"}); a persona keeps a subset of its agent's tools`,
        { field: "tools" },
      );
    if (body.secrets && body.secrets.length > 0) {
      const reach = new Set(Object.keys((await o.secrets.resolve(agent)).env));
      const bad = body.secrets.find((s) => !reach.has(s));
      if (bad !== undefined)
        throw new WarrenError(
          "request.invalid",
          `secrets: no secret named ${bad} reaches the agent; a persona keeps a subset of the secrets that reach its agent`,
          { field: "secrets" },
        );
    }
    if (body.area) {
      const [area] = await o.db
        .select({ name: schema.areas.name })
        .from(schema.areas)
        .where(and(eq(schema.areas.orgId, agent.orgId), eq(schema.areas.name, body.area)));
      if (!area)
        throw new WarrenError("request.invalid", `area: the organisation has no area named ${body.area}`, {
          field: "area",
        });
    }
    const [row] = await o.db
      .insert(schema.personas)
      .values({
        id: newId("prs"),
        orgId: agent.orgId,
        agentId: agent.id,
        name: body.name,
        instructions: body.instructions ?? "",
        area: body.area ?? null,
        tools: body.tools ? [...new Set(body.tools)] : null,
        secrets: body.secrets ? [...new Set(body.secrets)] : null,
      })
      .returning();
    if (!row) throw new Error("persona insert returned nothing");
    return personaView(row);
  }

  /** The agent's personas; a guest sees those homed in its areas, the only ones it talks through. */
  async list(who: Identity, agentId: string): Promise<Persona[]> {
    const agent = await this.o.agents.load(who, agentId, "converse").catch((err: unknown) => {
      if (err instanceof WarrenError && err.code === "access.denied")
        return this.o.agents.load(who, agentId, "read");
      throw err;
    });
    const rows = await this.o.db
      .select()
      .from(schema.personas)
      .where(eq(schema.personas.agentId, agent.id))
      .orderBy(asc(schema.personas.createdAt), asc(schema.personas.id));
    if ((await this.o.access.roleIn(agent.orgId, who)) !== "guest") return rows.map(personaView);
    const held = await this.o.access.areasOf(agent.orgId, who);
    return rows.filter((p) => p.area !== null && held.includes(p.area)).map(personaView);
  }

  async remove(who: Identity, id: string): Promise<void> {
    const [row] = await this.o.db.select().from(schema.personas).where(eq(schema.personas.id, id));
    if (!row) throw new WarrenError("not_found", "persona was not found");
    await this.o.access.require(row.orgId, who, "write", "persona");
    await this.o.db.delete(schema.personas).where(eq(schema.personas.id, id));
  }

  /** A persona of an agent, for a conversation that names it (not_found when it is another's). */
  async of(agentId: string, id: string): Promise<PersonaRow> {
    const [row] = await this.o.db
      .select()
      .from(schema.personas)
      .where(and(eq(schema.personas.id, id), eq(schema.personas.agentId, agentId)));
    if (!row) throw new WarrenError("not_found", "persona was not found");
    return row;
  }

  /**
   * The persona a new conversation names, for a starter holding the areas `held` ([]: the
   * whole home): one who holds areas picks only a persona homed in one of them, and learns
   * nothing of the others (the same answer whether the persona exists or not).
   */
  async chosen(agentId: string, id: string, held: readonly string[]): Promise<PersonaRow> {
    const outside = () =>
      new WarrenError(
        "area.refused",
        "you hold areas in this organisation: pick a persona homed in one of them (persona_id)",
      );
    const persona = await this.of(agentId, id).catch((err: unknown) => {
      throw held.length > 0 && err instanceof WarrenError && err.code === "not_found" ? outside() : err;
    });
    if (held.length > 0 && !(persona.area && held.includes(persona.area))) throw outside();
    return persona;
  }

  /** The persona a conversation keeps: null for none; deleted since, it keeps nothing (no tool, no secret). */
  async find(id: string | null): Promise<PersonaRow | null> {
    if (!id) return null;
    const [row] = await this.o.db.select().from(schema.personas).where(eq(schema.personas.id, id));
    return (
      row ?? {
        id,
        orgId: "",
        agentId: "",
        name: "(deleted)",
        instructions: "",
        area: null,
        tools: [],
        secrets: [],
        createdAt: new Date(0),
      }
    );
  }
}
