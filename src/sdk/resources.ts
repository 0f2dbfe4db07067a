// Organisations, machines, agents and guilds: one namespace each, answers as the server sends them.
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type { OrgUsage, UsageQuery } from "../contract/usage.js";

export type { OrgUsage };
import type {
  EnvironmentSetRequest,
  EnvProposal,
  EnvProposalCreateRequest,
  EnvRevision,
  MachineEnvironment,
  MachineDefinitionText,
  MachineImported,
  MachineImportRequest,
  Agent,
  AgentCreateRequest,
  AgentListQuery,
  AgentUpdateRequest,
  Area,
  AreaRevision,
  Guild,
  GuildCreateRequest,
  GuildMessage,
  GuildMessageRequest,
  GuildListQuery,
  List,
  Machine,
  MachineCreateRequest,
  MachineListQuery,
  MachineUpdateRequest,
  Member,
  MemberSetRequest,
  Org,
  OrgCreateRequest,
  OrgUpdateRequest,
} from "./types.js";

export class OrgsApi {
  constructor(private readonly http: Transport) {}

  /** Creates an organisation; the caller becomes its owner. */
  create(body: OrgCreateRequest, opts: RequestOptions = {}): Promise<Org> {
    return this.http.json("POST", "/api/orgs", { ...opts, json: body });
  }
  /** The organisations the caller is a member of. */
  list(opts: RequestOptions = {}): Promise<List<Org>> {
    return this.http.json("GET", "/api/orgs", opts);
  }
  get(id: string, opts: RequestOptions = {}): Promise<Org> {
    return this.http.json("GET", `/api/orgs/${seg(id)}`, opts);
  }
  update(id: string, body: OrgUpdateRequest, opts: RequestOptions = {}): Promise<Org> {
    return this.http.json("PATCH", `/api/orgs/${seg(id)}`, { ...opts, json: body });
  }
  /** Deletes an empty organisation (owner only). */
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/orgs/${seg(id)}`, opts);
  }
  members(id: string, opts: RequestOptions = {}): Promise<List<Member>> {
    return this.http.json("GET", `/api/orgs/${seg(id)}/members`, opts);
  }
  /** Adds a member by email, or changes a member's role (owner, admin). */
  setMember(id: string, body: MemberSetRequest, opts: RequestOptions = {}): Promise<Member> {
    return this.http.json("PUT", `/api/orgs/${seg(id)}/members`, { ...opts, json: body });
  }
  removeMember(id: string, userId: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/orgs/${seg(id)}/members/${seg(userId)}`, opts);
  }
  /** The organisation's areas (a member who holds areas sees only theirs). */
  areas(id: string, opts: RequestOptions = {}): Promise<List<Area>> {
    return this.http.json("GET", `/api/orgs/${seg(id)}/areas`, opts);
  }
  /** Defines an area or changes its folders (owner, admin): a new revision. */
  putArea(id: string, name: string, folders: string[], opts: RequestOptions = {}): Promise<Area> {
    return this.http.json("PUT", `/api/orgs/${seg(id)}/areas/${seg(name)}`, { ...opts, json: { folders } });
  }
  /** Every change of an area, oldest first. */
  areaRevisions(id: string, name: string, opts: RequestOptions = {}): Promise<List<AreaRevision>> {
    return this.http.json("GET", `/api/orgs/${seg(id)}/areas/${seg(name)}/revisions`, opts);
  }
  /** Deletes an area no member holds (owner, admin). */
  deleteArea(id: string, name: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/orgs/${seg(id)}/areas/${seg(name)}`, opts);
  }

  /**
   * What the organisation's runs (or one agent's, `agent`) used step by step from `since` to
   * `until` (default: the last day): tokens, dollars, CPU seconds, runs ended, disk.
   */
  usage(id: string, query: UsageQuery = {}, opts: RequestOptions = {}): Promise<OrgUsage> {
    return this.http.json("GET", `/api/orgs/${seg(id)}/usage`, { ...opts, query: { ...query } });
  }
}

export class MachinesApi {
  constructor(private readonly http: Transport) {}

  create(body: MachineCreateRequest, opts: RequestOptions = {}): Promise<Machine> {
    return this.http.json("POST", "/api/machines", { ...opts, json: body });
  }
  list(query: MachineListQuery = {}, opts: RequestOptions = {}): Promise<List<Machine>> {
    return this.http.json("GET", "/api/machines", { ...opts, query: { ...query } });
  }
  get(id: string, opts: RequestOptions = {}): Promise<Machine> {
    return this.http.json("GET", `/api/machines/${seg(id)}`, opts);
  }
  /** Renames or resizes a machine; limits reach the next box start. */
  update(id: string, body: MachineUpdateRequest, opts: RequestOptions = {}): Promise<Machine> {
    return this.http.json("PATCH", `/api/machines/${seg(id)}`, { ...opts, json: body });
  }
  /** Stops the machine's box; its files stay. */
  stop(id: string, opts: RequestOptions = {}): Promise<Machine> {
    return this.http.json("POST", `/api/machines/${seg(id)}/stop`, opts);
  }
  /** Pauses the machine's box (frozen in memory); the next command resumes it. */
  pause(id: string, opts: RequestOptions = {}): Promise<Machine> {
    return this.http.json("POST", `/api/machines/${seg(id)}/pause`, opts);
  }
  /** The machine's definition: its YAML text (what `warren machines export` prints) and its object. */
  definition(id: string, opts: RequestOptions = {}): Promise<MachineDefinitionText> {
    return this.http.json("GET", `/api/machines/${seg(id)}/definition`, opts);
  }
  /** Rebuilds a definition as a new machine of the organisation. */
  import(orgId: string, body: MachineImportRequest, opts: RequestOptions = {}): Promise<MachineImported> {
    return this.http.json("POST", `/api/orgs/${seg(orgId)}/machines/import`, { ...opts, json: body });
  }
  /** The machine's environment: its base, its last good revision's packages, a build going on. */
  environment(id: string, opts: RequestOptions = {}): Promise<MachineEnvironment> {
    return this.http.json("GET", `/api/machines/${seg(id)}/environment`, opts);
  }
  /** Sets the machine's packages (owner, admin): answers the new revision, building. */
  setEnvironment(id: string, body: EnvironmentSetRequest, opts: RequestOptions = {}): Promise<EnvRevision> {
    return this.http.json("PUT", `/api/machines/${seg(id)}/environment`, { ...opts, json: body });
  }
  /** The environment's revisions, newest first. */
  envRevisions(id: string, opts: RequestOptions = {}): Promise<List<EnvRevision>> {
    return this.http.json("GET", `/api/machines/${seg(id)}/environment/revisions`, opts);
  }
  /** One revision with its build's log. */
  envRevision(id: string, revision: number, opts: RequestOptions = {}): Promise<EnvRevision> {
    return this.http.json("GET", `/api/machines/${seg(id)}/environment/revisions/${revision}`, opts);
  }
  /** Proposes packages for the machine; nothing is built until an owner or admin approves. */
  propose(id: string, body: EnvProposalCreateRequest, opts: RequestOptions = {}): Promise<EnvProposal> {
    return this.http.json("POST", `/api/machines/${seg(id)}/environment/proposals`, { ...opts, json: body });
  }
  /** The machine's proposals, newest first (or those in one state). */
  proposals(
    id: string,
    query: { state?: "pending" | "approved" | "refused" } = {},
    opts: RequestOptions = {},
  ): Promise<List<EnvProposal>> {
    return this.http.json("GET", `/api/machines/${seg(id)}/environment/proposals`, { ...opts, query });
  }
  /** Approves (a new revision is built) or refuses a proposal (owner, admin). */
  decide(
    id: string,
    proposal: string,
    decision: "approve" | "refuse",
    opts: RequestOptions = {},
  ): Promise<EnvProposal> {
    return this.http.json("POST", `/api/machines/${seg(id)}/environment/proposals/${seg(proposal)}/decide`, {
      ...opts,
      json: { decision },
    });
  }
  /** Deletes a machine; `machine.not_empty` while it has agents. */
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/machines/${seg(id)}`, opts);
  }
}

export class AgentsApi {
  constructor(private readonly http: Transport) {}

  /** Creates an agent on a machine; it takes the machine's lowest free slot. */
  create(body: AgentCreateRequest, opts: RequestOptions = {}): Promise<Agent> {
    return this.http.json("POST", "/api/agents", { ...opts, json: body });
  }
  list(query: AgentListQuery = {}, opts: RequestOptions = {}): Promise<List<Agent>> {
    return this.http.json("GET", "/api/agents", { ...opts, query: { ...query } });
  }
  get(id: string, opts: RequestOptions = {}): Promise<Agent> {
    return this.http.json("GET", `/api/agents/${seg(id)}`, opts);
  }
  /** Moves the agent (its home, slot and ports) to another machine of its organisation. */
  move(id: string, machineId: string, opts: RequestOptions = {}): Promise<Agent> {
    return this.http.json("POST", `/api/agents/${seg(id)}/move`, {
      ...opts,
      json: { machine_id: machineId },
    });
  }
  /** Renames an agent, changes its disk cap or its sandbox policy (reaching its next command). */
  update(id: string, body: AgentUpdateRequest, opts: RequestOptions = {}): Promise<Agent> {
    return this.http.json("PATCH", `/api/agents/${seg(id)}`, { ...opts, json: body });
  }
  /** Deletes an agent and its home; its run records stay. */
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/agents/${seg(id)}`, opts);
  }
}

export class GuildsApi {
  constructor(private readonly http: Transport) {}

  create(body: GuildCreateRequest, opts: RequestOptions = {}): Promise<Guild> {
    return this.http.json("POST", "/api/guilds", { ...opts, json: body });
  }
  list(query: GuildListQuery = {}, opts: RequestOptions = {}): Promise<List<Guild>> {
    return this.http.json("GET", "/api/guilds", { ...opts, query: { ...query } });
  }
  get(id: string, opts: RequestOptions = {}): Promise<Guild> {
    return this.http.json("GET", `/api/guilds/${seg(id)}`, opts);
  }
  /** Deletes a guild; its agents stay. */
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/guilds/${seg(id)}`, opts);
  }
  addAgent(id: string, agentId: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("POST", `/api/guilds/${seg(id)}/agents`, { ...opts, json: { agent_id: agentId } });
  }
  removeAgent(id: string, agentId: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/guilds/${seg(id)}/agents/${seg(agentId)}`, opts);
  }
  /** A message to the guild: a turn of its least busy agent (or of all with `fan_out: true`), queued durably. */
  send(id: string, body: GuildMessageRequest, opts: RequestOptions = {}): Promise<GuildMessage> {
    return this.http.json("POST", `/api/guilds/${seg(id)}/messages`, { ...opts, json: body });
  }
  /** The guild's messages, newest first, each with where it went. */
  messages(id: string, opts: RequestOptions = {}): Promise<List<GuildMessage>> {
    return this.http.json("GET", `/api/guilds/${seg(id)}/messages`, opts);
  }
}
