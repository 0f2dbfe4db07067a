// The access list of a note or a collection, resolved for one agent: the agent's own row wins
// (and may be `none`); otherwise the better of its guilds' rows and the organisation's row; no
// row is no access. Rows are read when the agent asks, so a guild or organisation row covers
// agents created after it was written.

export type AccessMode = "read" | "write" | "none";
export type AccessScope = "org" | "guild" | "agent";

export interface AccessRow {
  scope: AccessScope;
  subjectId: string;
  mode: AccessMode;
}

export interface AccessSubject {
  id: string;
  orgId: string;
  guildIds: readonly string[];
}

const RANK: Record<AccessMode, number> = { none: 0, read: 1, write: 2 };

export function resolveAccess(rows: readonly AccessRow[], agent: AccessSubject): AccessMode {
  const own = rows.find((r) => r.scope === "agent" && r.subjectId === agent.id);
  if (own) return own.mode;
  let best: AccessMode = "none";
  for (const r of rows) {
    const reaches =
      (r.scope === "guild" && agent.guildIds.includes(r.subjectId)) ||
      (r.scope === "org" && r.subjectId === agent.orgId);
    if (reaches && RANK[r.mode] > RANK[best]) best = r.mode;
  }
  return best;
}

export const allowsRead = (m: AccessMode): boolean => m === "read" || m === "write";
