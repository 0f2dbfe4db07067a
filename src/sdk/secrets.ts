// Secrets: names, descriptions and grants. A value goes in once, at creation, and never comes back.
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  List,
  Secret,
  SecretCreateRequest,
  SecretGrant,
  SecretListQuery,
  SecretUpdateRequest,
} from "./types.js";

const same = (a: SecretGrant, b: SecretGrant) => a.scope === b.scope && a.id === b.id;

export class SecretsApi {
  constructor(private readonly http: Transport) {}

  /** Creates a secret (`value`) or an alias of one (`alias_of`); the answer never holds the value. */
  create(body: SecretCreateRequest, opts: RequestOptions = {}): Promise<Secret> {
    return this.http.json("POST", "/api/secrets", { ...opts, json: body });
  }
  list(query: SecretListQuery = {}, opts: RequestOptions = {}): Promise<List<Secret>> {
    return this.http.json("GET", "/api/secrets", { ...opts, query: { ...query } });
  }
  get(id: string, opts: RequestOptions = {}): Promise<Secret> {
    return this.http.json("GET", `/api/secrets/${seg(id)}`, opts);
  }
  /** Changes the description, or replaces the grants with those given. */
  update(id: string, body: SecretUpdateRequest, opts: RequestOptions = {}): Promise<Secret> {
    return this.http.json("PATCH", `/api/secrets/${seg(id)}`, { ...opts, json: body });
  }
  /** Moves a secret of use env (and its aliases) to use tool: only the tool gateway reads it from then on. */
  useTool(id: string, opts: RequestOptions = {}): Promise<Secret> {
    return this.update(id, { use: "tool" }, opts);
  }

  /** Sets the hosts a model key may be sent to (owners and admins); [] leaves only the provider's official host. */
  setHosts(id: string, hosts: string[], opts: RequestOptions = {}): Promise<Secret> {
    return this.update(id, { hosts }, opts);
  }

  /** Deletes a secret and its aliases. */
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/secrets/${seg(id)}`, opts);
  }
  /** Adds a grant (reads the grants, then writes them with this one). */
  async grant(id: string, grant: SecretGrant, opts: RequestOptions = {}): Promise<Secret> {
    const s = await this.get(id, opts);
    if (s.grants.some((g) => same(g, grant))) return s;
    return this.update(id, { grants: [...s.grants, grant] }, opts);
  }
  /** Takes a grant away (reads the grants, then writes them without this one). */
  async revoke(id: string, grant: SecretGrant, opts: RequestOptions = {}): Promise<Secret> {
    const s = await this.get(id, opts);
    if (!s.grants.some((g) => same(g, grant))) return s;
    return this.update(id, { grants: s.grants.filter((g) => !same(g, grant)) }, opts);
  }
}
