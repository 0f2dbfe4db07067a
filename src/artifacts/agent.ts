// The artifact store as one agent's tools see it, the agent acting as itself: its own notes
// and the notes whose access list reaches it (its organisation's spelled `org/<name>.md`, a
// bare name being its own), its memory (the current text only: earlier
// revisions are for operators), the collections whose access list reaches it (records written
// only under `write`), and its own scripts. What it writes is redacted of every secret that
// reaches it before it is stored.
import { and, asc, eq, inArray, or } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import { schema, type Db } from "../store/index.js";
import { allowsRead, resolveAccess, type AccessMode, type AccessRow } from "./access.js";
import {
  collectionPath,
  isName,
  memoryPath,
  parseArtifactPath,
  scriptPath,
  type ArtifactPath,
} from "./paths.js";
import { listItems, readRow, writeRow, type ArtifactItem } from "./rows.js";

export interface ArtifactAgent {
  id: string;
  orgId: string;
}

type Redactor = { redactText(s: string): string };

const refused = (what: string) => new WarrenError("access.denied", what);

/** How note tools spell an organisation's note (`<name>.md` in the store): `org/<name>.md`. */
const ORG_NOTES = "org/";

export class AgentArtifacts {
  constructor(
    private readonly db: Db,
    readonly agent: ArtifactAgent,
    private readonly redactor: () => Promise<Redactor>,
  ) {}

  /**
   * A note as note tools name it: a bare name (`plan.md`) is the agent's own note,
   * `org/<name>.md` its organisation's, any other a display path (`guilds/<guild id>/<name>.md`,
   * `agents/<agent id>/notes/<name>.md`). Answers the note's path in the store.
   */
  notePath(raw: string): Extract<ArtifactPath, { kind: "note" }> {
    const org = raw.startsWith(ORG_NOTES) ? raw.slice(ORG_NOTES.length) : null;
    if (org !== null && org.includes("/"))
      throw new WarrenError("request.invalid", `${raw} is not an organisation's note (org/<name>.md)`);
    const full = org ?? (raw.includes("/") ? raw : `agents/${this.agent.id}/notes/${raw}`);
    const p = parseArtifactPath(full);
    if (p.kind !== "note")
      throw new WarrenError("request.invalid", `${raw} is not a note (a path ending in .md)`);
    return p;
  }

  /** A note's path in the store as note tools spell it (what note_list gives): `org/<name>.md` for an organisation's. */
  spelled(path: string): string {
    const p = parseArtifactPath(path);
    return p.kind === "note" && p.owner === "org" ? `${ORG_NOTES}${p.name}` : path;
  }

  #own(p: ArtifactPath): boolean {
    return "agentId" in p && p.agentId === this.agent.id;
  }

  /** The access rows that can reach this agent (its own, its guilds', its organisation's), of some paths or all. */
  async #reaching(paths?: string[]): Promise<Map<string, AccessMode>> {
    const ga = schema.guildAgents;
    const guildIds = (
      await this.db.select({ id: ga.guildId }).from(ga).where(eq(ga.agentId, this.agent.id))
    ).map((r) => r.id);
    const t = schema.artifactAccess;
    const who = [
      and(eq(t.scope, "agent"), eq(t.subjectId, this.agent.id)),
      and(eq(t.scope, "org"), eq(t.subjectId, this.agent.orgId)),
    ];
    if (guildIds.length > 0) who.push(and(eq(t.scope, "guild"), inArray(t.subjectId, guildIds)));
    const rows = await this.db
      .select()
      .from(t)
      .where(and(eq(t.orgId, this.agent.orgId), or(...who), paths ? inArray(t.path, paths) : undefined));
    const byPath = new Map<string, AccessRow[]>();
    for (const r of rows) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
    const subject = { id: this.agent.id, orgId: this.agent.orgId, guildIds };
    return new Map([...byPath].map(([p, rs]) => [p, resolveAccess(rs, subject)]));
  }

  async #mode(path: string): Promise<AccessMode> {
    return (await this.#reaching([path])).get(path) ?? "none";
  }

  async #write(p: ArtifactPath, content: string) {
    const r = await this.redactor();
    return writeRow(this.db, {
      orgId: this.agent.orgId,
      path: p.path,
      kind: p.kind,
      agentId: "agentId" in p ? p.agentId : null,
      content: r.redactText(content),
      by: this.agent.id,
    });
  }

  async #content(path: string, missing: string): Promise<string> {
    const row = await readRow(this.db, this.agent.orgId, path);
    if (!row) throw new WarrenError("not_found", missing);
    return row.content;
  }

  // ---- notes

  async listNotes(): Promise<(ArtifactItem & { mode: AccessMode })[]> {
    const reach = await this.#reaching();
    const shared = [...reach].filter(([p, m]) => !p.startsWith("collections/") && allowsRead(m));
    const items = await listItems(this.db, this.agent.orgId, {
      kind: "note",
      agentId: this.agent.id,
      paths: shared.map(([p]) => p),
    });
    return items.map((i) => ({
      ...i,
      path: this.spelled(i.path),
      mode: this.#own(parseArtifactPath(i.path)) ? "write" : reach.get(i.path)!,
    }));
  }

  /** A note the agent reaches; one it does not is refused alike whether it exists or not. */
  async readNote(raw: string): Promise<string> {
    const p = this.notePath(raw);
    const name = this.spelled(p.path);
    if (!this.#own(p) && !allowsRead(await this.#mode(p.path)))
      throw refused(`the note ${name} is not shared with you`);
    return this.#content(p.path, `there is no note ${name}`);
  }

  async writeNote(raw: string, content: string) {
    const p = this.notePath(raw);
    const name = this.spelled(p.path);
    if (!this.#own(p) && (await this.#mode(p.path)) !== "write")
      throw refused(`you may not write the note ${name} (its access list gives you no write)`);
    const r = await this.#write(p, content);
    return { ...r, path: name };
  }

  // ---- memory: the current text only

  async readMemory(): Promise<string | null> {
    const row = await readRow(this.db, this.agent.orgId, memoryPath(this.agent.id));
    return row?.content ?? null;
  }

  async writeMemory(content: string) {
    return this.#write(parseArtifactPath(memoryPath(this.agent.id)), content);
  }

  // ---- collections

  async listCollections(): Promise<{ name: string; mode: AccessMode }[]> {
    const reach = await this.#reaching();
    return [...reach]
      .filter(([p, m]) => p.startsWith("collections/") && allowsRead(m))
      .map(([p, mode]) => ({ name: p.slice("collections/".length), mode }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async #collection(name: string, need: "read" | "write"): Promise<void> {
    if (!isName(name))
      throw new WarrenError("request.invalid", `${JSON.stringify(name)} is not a collection's name`);
    const mode = await this.#mode(collectionPath(name));
    if (need === "write" ? mode !== "write" : !allowsRead(mode))
      throw refused(
        need === "write" && mode === "read"
          ? `the collection ${name} is shared with you read-only`
          : `the collection ${name} is not shared with you`,
      );
  }

  async listRecords(collection: string): Promise<ArtifactItem[]> {
    await this.#collection(collection, "read");
    return listItems(this.db, this.agent.orgId, { prefix: `${collectionPath(collection)}/`, kind: "record" });
  }

  async getRecord(collection: string, id: string): Promise<string> {
    await this.#collection(collection, "read");
    const p = parseArtifactPath(`${collectionPath(collection)}/${id}`);
    return this.#content(p.path, `the collection ${collection} has no record ${id}`);
  }

  async putRecord(collection: string, id: string, json: string) {
    await this.#collection(collection, "write");
    return this.#write(parseArtifactPath(`${collectionPath(collection)}/${id}`), json);
  }

  // ---- scripts: the agent's own

  async listScripts(): Promise<ArtifactItem[]> {
    return listItems(this.db, this.agent.orgId, {
      prefix: `agents/${this.agent.id}/scripts/`,
      kind: "script",
    });
  }

  async writeScript(name: string, content: string) {
    return this.#write(parseArtifactPath(scriptPath(this.agent.id, name)), content);
  }

  /** Every script of the agent with its text, to be materialised in its home's scripts/. */
  async scripts(): Promise<{ name: string; content: string }[]> {
    const a = schema.artifacts;
    const rows = await this.db
      .select({ path: a.path, content: a.content })
      .from(a)
      .where(and(eq(a.orgId, this.agent.orgId), eq(a.agentId, this.agent.id), eq(a.kind, "script")))
      .orderBy(asc(a.path));
    return rows.map((r) => ({ name: r.path.slice(r.path.lastIndexOf("/") + 1), content: r.content }));
  }
}
