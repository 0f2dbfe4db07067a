// What the pages that grant something to an organisation, a guild or an agent share (Secrets,
// Connections): the organisation picker that keeps its choice in the address, the agents and
// guilds a grant may name, and a grant in words.
import { useQuery } from "@tanstack/react-query";
import type { SecretGrant } from "warren/sdk";
import { keys, warren } from "./api";
import { navigate } from "./router";

export interface Named {
  id: string;
  name: string;
}

/** The organisation's agents and guilds, which a grant may name. */
export function useGrantees(orgId: string) {
  const agents = useQuery({
    queryKey: keys.agents(orgId),
    enabled: orgId !== "",
    queryFn: () => warren.agents.list({ org_id: orgId }).then((l) => l.items),
  });
  const guilds = useQuery({
    queryKey: keys.guilds(orgId),
    enabled: orgId !== "",
    queryFn: () => warren.guilds.list({ org_id: orgId }).then((l) => l.items),
  });
  return { agents, guilds };
}

/** The choices of a grant's select: the whole organisation, each agent, each guild. */
export function grantTargets(orgId: string, agents: Named[], guilds: Named[]) {
  return [
    { value: `org:${orgId}`, label: "the whole organisation" },
    ...agents.map((a) => ({ value: `agent:${a.id}`, label: `agent ${a.name}` })),
    ...guilds.map((g) => ({ value: `guild:${g.id}`, label: `guild ${g.name}` })),
  ];
}

/** A grant in words: the whole organisation, agent NAME, guild NAME (its id when unknown). */
export function grantName(g: SecretGrant, agents: Named[], guilds: Named[]): string {
  if (g.scope === "org") return "the whole organisation";
  const named = (g.scope === "agent" ? agents : guilds).find((x) => x.id === g.id);
  return `${g.scope} ${named?.name ?? g.id}`;
}

/** The organisation picker of the page at `path`, its choice kept in the address (?org=). */
export function OrgSelect({ orgs, value, path }: { orgs: Named[] | undefined; value: string; path: string }) {
  return (
    <label>
      Organisation
      <select
        name="org"
        value={value}
        onChange={(e) => navigate(`${path}?org=${e.target.value}`, { replace: true })}
      >
        {orgs?.map((o) => (
          <option key={o.id} value={o.id}>
            {o.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * What a thing is granted to, each grant with its × (`undo` names the act: "revoke" on
 * Secrets, "ungrant" on Connections), then a select of the targets it is not granted to yet.
 */
export function GrantList({
  name,
  grants,
  targets,
  nameOf,
  undo,
  write,
  canGrant = write,
  onGrant,
  onUndo,
}: {
  name: string;
  grants: SecretGrant[];
  targets: { value: string; label: string }[];
  nameOf: (g: SecretGrant) => string;
  undo: string;
  write: boolean;
  canGrant?: boolean;
  onGrant: (g: SecretGrant) => void;
  onUndo: (g: SecretGrant) => void;
}) {
  return (
    <>
      {grants.length === 0 && "nobody yet"}
      {grants.map((g) => (
        <span key={`${g.scope}:${g.id}`} className="grant">
          {nameOf(g)}
          {write && (
            <button
              type="button"
              className="link"
              aria-label={`${undo} ${name} from ${nameOf(g)}`}
              onClick={() => onUndo(g)}
            >
              ×
            </button>
          )}
        </span>
      ))}
      {canGrant && (
        <select
          aria-label={`grant ${name} to`}
          value=""
          onChange={(e) => {
            const [scope, id] = e.target.value.split(":") as [SecretGrant["scope"], string];
            if (id) onGrant({ scope, id });
          }}
        >
          <option value="">grant to…</option>
          {targets
            .filter((t) => !grants.some((g) => `${g.scope}:${g.id}` === t.value))
            .map((t) => (
              <option key={t.value} value={t.value}>
                {t.label}
              </option>
            ))}
        </select>
      )}
    </>
  );
}
