// Names wherever ids go: before a command runs, every organisation, agent or machine it was
// given by name (`--org acme`, `warren exec builder -- ls`) is asked of the server as an id.
// The organisation of the command (its --org, else $WARREN_ORG) narrows agent and machine names.
import type { WarrenClient } from "../sdk/index.js";

type Kind = "org" | "agent" | "machine";

/** The parameter names that hold an id, by what they name. */
const KINDS: Readonly<Record<string, Kind>> = {
  orgId: "org",
  org_id: "org",
  agentId: "agent",
  agent_id: "agent",
  machineId: "machine",
  machine_id: "machine",
};

const ID = /^(org|agt|mch)_[0-9a-z]{16}$/;

type Bag = Record<string, unknown>;

/** A plain object of parameters (not a list, a buffer or any other made thing). */
const isBag = (v: unknown): v is Bag =>
  typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;

/** The id of a name's answer; an answer without one (not a warren server) is an error, not undefined. */
function idIn(answer: { id?: unknown }): string {
  if (typeof answer.id === "string" && ID.test(answer.id)) return answer.id;
  throw new Error("the server's answer to a name names no id: is --url a warren server?");
}

/** The command's parameters with every name put as its id (the parameters are not changed). */
export async function resolveNames<P>(
  client: WarrenClient,
  params: P,
  envOrg: string | undefined,
): Promise<P> {
  if (!isBag(params)) return params;
  const bags: Bag[] = [params, ...Object.values(params).filter(isBag)];
  const named = (kind: Kind) =>
    bags.flatMap((b) =>
      Object.entries(b).filter(([k, v]) => KINDS[k] === kind && typeof v === "string" && v !== ""),
    );
  if (
    !bags.some((b) =>
      Object.entries(b).some(([k, v]) => KINDS[k] && typeof v === "string" && v !== "" && !ID.test(v)),
    )
  )
    return params;
  const given = named("org")[0]?.[1] as string | undefined;
  const scope = given ?? (envOrg === "" ? undefined : envOrg);
  const orgId =
    scope === undefined || ID.test(scope) ? scope : idIn(await client.resolve({ kind: "org", name: scope }));
  const idOf = async (kind: Kind, text: string): Promise<string> => {
    if (ID.test(text)) return text;
    if (kind === "org")
      return text === scope && orgId !== undefined ? orgId : idIn(await client.resolve({ kind, name: text }));
    return idIn(
      await client.resolve({ kind, name: text, ...(orgId !== undefined ? { org_id: orgId } : {}) }),
    );
  };
  const copy = async (b: Bag): Promise<Bag> => {
    const out: Bag = {};
    for (const [k, v] of Object.entries(b)) {
      const kind = KINDS[k];
      out[k] =
        kind && typeof v === "string" && v !== ""
          ? await idOf(kind, v)
          : isBag(v) && b === params
            ? await copy(v)
            : v;
    }
    return out;
  };
  return (await copy(params)) as P;
}
