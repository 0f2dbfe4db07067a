// The typed client of a warren server.
import { AgentHandle } from "./agent.js";
import { OrgArtifacts } from "./artifacts.js";
import { ConnectionsApi } from "./connections.js";
import { ConversationsApi, PersonasApi } from "./conversations.js";
import { ApprovalsApi } from "./versions.js";
import { FlowsApi } from "./flows.js";
import { AgentsApi, GuildsApi, MachinesApi, OrgsApi } from "./resources.js";
import { RunsApi } from "./runs.js";
import { SchedulesApi } from "./schedules.js";
import { SecretsApi } from "./secrets.js";
import { Transport, type RequestOptions, type WarrenClientOptions } from "./transport.js";
import type { Health, NameAnswer, NameQuery } from "./types.js";

export class WarrenClient {
  readonly baseUrl: string;
  readonly orgs: OrgsApi;
  readonly machines: MachinesApi;
  readonly agents: AgentsApi;
  readonly guilds: GuildsApi;
  readonly runs: RunsApi;
  readonly secrets: SecretsApi;
  /** OAuth 2.0 providers, connected accounts and their grants. */
  readonly connections: ConnectionsApi;
  readonly conversations: ConversationsApi;
  readonly personas: PersonasApi;
  /** Approvals of tool calls: list those waiting, decide one. */
  readonly approvals: ApprovalsApi;
  readonly schedules: SchedulesApi;
  readonly flows: FlowsApi;
  private readonly http: Transport;

  constructor(options: WarrenClientOptions) {
    this.http = new Transport(options);
    this.baseUrl = this.http.baseUrl;
    this.orgs = new OrgsApi(this.http);
    this.machines = new MachinesApi(this.http);
    this.agents = new AgentsApi(this.http);
    this.guilds = new GuildsApi(this.http);
    this.runs = new RunsApi(this.http);
    this.secrets = new SecretsApi(this.http);
    this.connections = new ConnectionsApi(this.http);
    this.conversations = new ConversationsApi(this.http);
    this.personas = new PersonasApi(this.http);
    this.approvals = new ApprovalsApi(this.http);
    this.schedules = new SchedulesApi(this.http);
    this.flows = new FlowsApi(this.http);
  }

  /** One agent's commands, files, usage and runs. No request is made until one of them is used. */
  agent(id: string): AgentHandle {
    return new AgentHandle(this.http, id, this.runs);
  }

  /** An organisation's artifact store (notes, memories, scripts, collections). */
  artifacts(orgId: string): OrgArtifacts {
    return new OrgArtifacts(this.http, orgId);
  }

  /**
   * The id of an organisation, agent or machine by its name (an id answers itself), among what
   * the caller sees; `org_id` (an id or a name) narrows an agent or machine to one organisation.
   * A name several share is a 400 `name.ambiguous` naming them all.
   */
  resolve(query: NameQuery, opts: RequestOptions = {}): Promise<NameAnswer> {
    return this.http.json("GET", "/api/names", { ...opts, query: { ...query } });
  }

  /** `{ok: true}` once the server's store and provider are ready (a 503 `http.503` before). */
  health(opts: RequestOptions = {}): Promise<Health> {
    return this.http.json("GET", "/health", opts);
  }
}
