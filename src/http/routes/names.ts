// Names where ids go: an organisation, an agent or a machine looked up by its name among what
// the caller may see. An id is answered as itself; a name two things share is refused with them.
import { NameAnswer, NameQuery } from "../../contract/names.js";
import type { Identity } from "../../access/index.js";
import { notFound, WarrenError } from "../../errors.js";
import { route, type AnyRoute } from "../route.js";

interface Named {
  id: string;
  name: string;
  org_id: string;
}

/** What the lookup reads: the lists the caller may see. */
interface NameSources {
  orgs: { list(who: Identity): Promise<{ id: string; name: string }[]> };
  agents: { list(who: Identity, filter: { org_id?: string }): Promise<Named[]> };
  machines: { list(who: Identity, orgId?: string): Promise<Named[]> };
}

const WHAT = { org: "organisation", agent: "agent", machine: "machine" } as const;

/** The one thing `text` names among `all`: by id, else by exact name, else by name ignoring case. */
function pick(kind: keyof typeof WHAT, text: string, all: readonly Named[]): Named {
  const byId = all.find((x) => x.id === text);
  if (byId) return byId;
  let found = all.filter((x) => x.name === text);
  if (found.length === 0) found = all.filter((x) => x.name.toLowerCase() === text.toLowerCase());
  const [only] = found;
  if (!only) throw notFound(`${WHAT[kind]} ${JSON.stringify(text)}`);
  if (found.length > 1) {
    const list = found.map((x) => (kind === "org" ? x.id : `${x.id} (in ${x.org_id})`)).join(", ");
    throw new WarrenError(
      "name.ambiguous",
      `${found.length} ${WHAT[kind]}s are named ${JSON.stringify(text)}: ${list}; give an id` +
        (kind === "org" ? "" : " or the organisation"),
      { candidates: found.map(({ id, name, org_id }) => ({ id, name, org_id })) },
    );
  }
  return only;
}

/** Resolves a name (or an id) of `kind` as `who` sees it. */
async function resolveName(
  sources: NameSources,
  who: Identity,
  q: { kind: keyof typeof WHAT; name: string; org_id?: string | undefined },
): Promise<Named> {
  const orgs = async () =>
    (await sources.orgs.list(who)).map((o) => ({ id: o.id, name: o.name, org_id: o.id }));
  if (q.kind === "org") return pick("org", q.name, await orgs());
  const orgId =
    q.org_id === undefined || q.org_id === "" ? undefined : pick("org", q.org_id, await orgs()).id;
  const all =
    q.kind === "agent"
      ? await sources.agents.list(who, orgId === undefined ? {} : { org_id: orgId })
      : await sources.machines.list(who, orgId);
  return pick(q.kind, q.name, all);
}

export function nameRoutes(sources: NameSources): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/names",
      id: "names.resolve",
      tag: "names",
      summary:
        "The id of an organisation, agent or machine by its name (exact, else ignoring case) among what the caller sees; ?org_id= narrows an agent or machine to one organisation (its id or name)",
      query: NameQuery,
      response: NameAnswer,
      errors: ["name.ambiguous"],
      handler: async ({ who, query }) => {
        const { id, name, org_id } = await resolveName(sources, who, query);
        return { kind: query.kind, id, name, org_id };
      },
    }),
  ];
}
