// Connections: OAuth 2.0 providers (owners and admins register them), accounts a member connects
// through the provider's login, and their grants. No answer ever holds a token or a client secret.
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  Connection,
  ConnectionCreateRequest,
  ConnectionProvider,
  ConnectionProviderCreateRequest,
  ConnectionStarted,
  List,
  SecretGrant,
} from "./types.js";

export class ConnectionsApi {
  constructor(private readonly http: Transport) {}

  /** Registers a provider: its endpoints, client id, client secret (sealed, never answered), scopes. */
  createProvider(
    body: ConnectionProviderCreateRequest,
    opts: RequestOptions = {},
  ): Promise<ConnectionProvider> {
    return this.http.json("POST", "/api/connections/providers", { ...opts, json: body });
  }
  providers(query: { org_id?: string } = {}, opts: RequestOptions = {}): Promise<List<ConnectionProvider>> {
    return this.http.json("GET", "/api/connections/providers", { ...opts, query: { ...query } });
  }
  /** Removes a provider and every connection made through it. */
  deleteProvider(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/connections/providers/${seg(id)}`, opts);
  }
  /** Starts connecting an account: the browser goes to `authorize_url` and comes back to warren. */
  start(body: ConnectionCreateRequest, opts: RequestOptions = {}): Promise<ConnectionStarted> {
    return this.http.json("POST", "/api/connections", { ...opts, json: body });
  }
  list(query: { org_id?: string } = {}, opts: RequestOptions = {}): Promise<List<Connection>> {
    return this.http.json("GET", "/api/connections", { ...opts, query: { ...query } });
  }
  get(id: string, opts: RequestOptions = {}): Promise<Connection> {
    return this.http.json("GET", `/api/connections/${seg(id)}`, opts);
  }
  /** Replaces the grants: every agent they reach uses the connection as its one account. */
  setGrants(id: string, grants: SecretGrant[], opts: RequestOptions = {}): Promise<Connection> {
    return this.http.json("PUT", `/api/connections/${seg(id)}/grants`, { ...opts, json: { grants } });
  }
  /** Revokes a connection: its tokens are forgotten; a tool's next call through it is refused with why. */
  revoke(id: string, opts: RequestOptions = {}): Promise<Connection> {
    return this.http.json("POST", `/api/connections/${seg(id)}/revoke`, opts);
  }
}
