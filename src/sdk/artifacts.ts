// An organisation's artifact store: notes, memories, scripts and collection records under
// display paths (`agents/<agent id>/memory.md`, `guilds/<guild id>/<name>.md`,
// `collections/<name>/<id>`, `<name>.md`, ...), memory's revisions, and access lists.
import { homePath, seg, type RequestOptions, type Transport } from "./transport.js";
import type { AccessList, ArtifactGrant, ArtifactItem, ArtifactWritten, List } from "./types.js";

export interface ArtifactRevision {
  revision: number;
  /** An agent's id or a person's email. */
  by: string;
  at: string;
  bytes: number;
}

export class OrgArtifacts {
  constructor(
    private readonly http: Transport,
    private readonly orgId: string,
  ) {}

  private url(kind: "artifacts" | "access", path: string): string {
    return `/api/orgs/${seg(this.orgId)}/${kind}/${homePath(path)}`;
  }

  /** The artifacts whose paths start with `prefix` (all when empty), by path. */
  list(prefix = "", opts: RequestOptions = {}): Promise<List<ArtifactItem>> {
    return this.http.json("GET", `/api/orgs/${seg(this.orgId)}/artifacts`, { ...opts, query: { prefix } });
  }
  /** The current text (Markdown, a script, or a record's JSON). */
  async read(path: string, opts: RequestOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.http.bytes("GET", this.url("artifacts", path), opts));
  }
  write(path: string, text: string, opts: RequestOptions = {}): Promise<ArtifactWritten> {
    return this.http.json("PUT", this.url("artifacts", path), {
      ...opts,
      bytes: new TextEncoder().encode(text),
    });
  }
  /** Newest first: every revision of a memory, the current one of anything else. */
  revisions(path: string, opts: RequestOptions = {}): Promise<List<ArtifactRevision>> {
    return this.http.json("GET", this.url("artifacts", path), { ...opts, query: { revisions: "" } });
  }
  /** The text of an earlier revision of a memory. */
  async revision(path: string, revision: number, opts: RequestOptions = {}): Promise<string> {
    const data = await this.http.bytes("GET", this.url("artifacts", path), { ...opts, query: { revision } });
    return new TextDecoder().decode(data);
  }
  /** The access list of a note or a collection (`collections/<name>`). */
  access(path: string, opts: RequestOptions = {}): Promise<AccessList> {
    return this.http.json("GET", this.url("access", path), opts);
  }
  setAccess(path: string, grants: ArtifactGrant[], opts: RequestOptions = {}): Promise<AccessList> {
    return this.http.json("PUT", this.url("access", path), { ...opts, json: { grants } });
  }
}
