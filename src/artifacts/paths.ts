// Display paths of the artifact store, relative to their organisation (which the API names
// in its URL): `agents/<agent id>/memory.md`, `agents/<agent id>/notes/<name>.md`,
// `agents/<agent id>/scripts/<name>`, `guilds/<guild id>/<name>.md`, `<name>.md` (the
// organisation's notes), `collections/<name>` (a collection: its access list) and
// `collections/<name>/<record id>` (a record, JSON). Ids, not names, are in the paths, so a
// reused name gets fresh rows.
import { WarrenError } from "../errors.js";

export type ArtifactKind = "memory" | "note" | "script" | "record";

export type ArtifactPath =
  | { kind: "memory"; path: string; agentId: string }
  | { kind: "note"; path: string; owner: "agent"; agentId: string; name: string }
  | { kind: "note"; path: string; owner: "guild"; guildId: string; name: string }
  | { kind: "note"; path: string; owner: "org"; name: string }
  | { kind: "script"; path: string; agentId: string; name: string }
  | { kind: "record"; path: string; collection: string; id: string };

/** A name in a path: letters, digits, `.`, `_` and `-`, not starting with a dot, at most 128. */
const NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
const AGENT_ID = /^agt_[A-Za-z0-9]{1,64}$/;
const GUILD_ID = /^gld_[A-Za-z0-9]{1,64}$/;

const invalid = (raw: string, why: string) =>
  new WarrenError(
    "request.invalid",
    `path: ${JSON.stringify(raw.slice(0, 200))} ${why}; artifact paths are agents/<agent id>/memory.md, agents/<agent id>/notes/<name>.md, agents/<agent id>/scripts/<name>, guilds/<guild id>/<name>.md, collections/<name>/<record id> or <name>.md`,
    { field: "path" },
  );

export const isName = (s: string): boolean => NAME.test(s);

/** A note's file name: a name ending in `.md`. */
const noteName = (s: string | undefined): s is string => !!s && isName(s) && s.endsWith(".md") && s !== ".md";

/** Parses a display path of an artifact (not a collection alone); throws request.invalid. */
export function parseArtifactPath(raw: string): ArtifactPath {
  const parts = raw.split("/");
  if (parts.some((p) => p === "")) throw invalid(raw, "has an empty part");
  const [a, b, c, d, ...rest] = parts;
  if (rest.length > 0) throw invalid(raw, "is too deep");
  if (a === "agents") {
    if (!b || !AGENT_ID.test(b)) throw invalid(raw, "does not name an agent id");
    if (c === "memory.md" && d === undefined) return { kind: "memory", path: raw, agentId: b };
    if (c === "notes" && noteName(d)) return { kind: "note", path: raw, owner: "agent", agentId: b, name: d };
    if (c === "scripts" && d !== undefined && isName(d))
      return { kind: "script", path: raw, agentId: b, name: d };
    throw invalid(raw, "is not an agent's memory, note or script");
  }
  if (a === "guilds") {
    if (!b || !GUILD_ID.test(b)) throw invalid(raw, "does not name a guild id");
    if (noteName(c) && d === undefined)
      return { kind: "note", path: raw, owner: "guild", guildId: b, name: c };
    throw invalid(raw, "is not a guild's note");
  }
  if (a === "collections") {
    if (!b || !isName(b)) throw invalid(raw, "does not name a collection");
    if (c !== undefined && isName(c) && d === undefined)
      return { kind: "record", path: raw, collection: b, id: c };
    throw invalid(raw, "is not a record of a collection");
  }
  if (noteName(a) && b === undefined) return { kind: "note", path: raw, owner: "org", name: a };
  throw invalid(raw, "is not an artifact path");
}

/** What an access list is on: a note, or a collection (`collections/<name>`). */
export function parseAccessPath(raw: string): {
  path: string;
  kind: "note" | "collection";
  collection?: string;
} {
  const parts = raw.split("/");
  if (parts.length === 2 && parts[0] === "collections" && isName(parts[1]!))
    return { path: raw, kind: "collection", collection: parts[1]! };
  const p = parseArtifactPath(raw);
  if (p.kind !== "note")
    throw new WarrenError(
      "request.invalid",
      `path: access lists are on notes and collections (collections/<name>), not on a ${p.kind}`,
      { field: "path" },
    );
  return { path: raw, kind: "note" };
}

export const memoryPath = (agentId: string): string => `agents/${agentId}/memory.md`;
export const scriptPath = (agentId: string, name: string): string => `agents/${agentId}/scripts/${name}`;
export const collectionPath = (name: string): string => `collections/${name}`;
