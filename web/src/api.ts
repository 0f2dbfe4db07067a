// The app's client: the SDK, speaking to the server that served the page, and the query keys.
import { isWarrenApiError, WarrenClient, type Org, type Role } from "warren/sdk";
import { useQuery } from "@tanstack/react-query";

export const warren = new WarrenClient({ baseUrl: window.location.origin, retries: 1 });

export const keys = {
  orgs: ["orgs"] as const,
  members: (org: string) => ["members", org] as const,
  machines: (org: string) => ["machines", org] as const,
  machine: (id: string) => ["machine", id] as const,
  agents: (org: string) => ["agents", org] as const,
  agent: (id: string) => ["agent", id] as const,
  usage: (id: string) => ["usage", id] as const,
  runs: (agent: string) => ["runs", agent] as const,
  run: (id: string) => ["run", id] as const,
  folder: (agent: string, path: string) => ["folder", agent, path] as const,
  secrets: (org: string) => ["secrets", org] as const,
  guilds: (org: string) => ["guilds", org] as const,
  conversations: (agent: string) => ["conversations", agent] as const,
  personas: (agent: string) => ["personas", agent] as const,
  conversation: (id: string) => ["conversation", id] as const,
  messages: (conversation: string) => ["messages", conversation] as const,
  areas: (org: string) => ["areas", org] as const,
  diff: (conversation: string) => ["diff", conversation] as const,
  flows: (org: string) => ["flows", org] as const,
  instances: (flow: string) => ["instances", flow] as const,
  instance: (id: string) => ["instance", id] as const,
};

export function useOrgs() {
  return useQuery({ queryKey: keys.orgs, queryFn: () => warren.orgs.list().then((l) => l.items) });
}

/** An agent's personas (the conversation list's picker, a thread's persona name). */
export function usePersonas(agentId: string) {
  return useQuery({
    queryKey: keys.personas(agentId),
    queryFn: () =>
      warren
        .agent(agentId)
        .personas.list()
        .then((l) => l.items),
  });
}

/** What the caller's role (and its areas) lets it do in an organisation, as the API enforces it. */
export interface Can {
  role: Role | undefined;
  /** Create, change, run (owner, admin, an editor who holds no area). */
  write: boolean;
  /** Upload and change files (as write, an editor with areas and a writer inside them). */
  files: boolean;
  /** Start conversations and talk in them (as files, and a guest). */
  converse: boolean;
  /** Members and the organisation itself (owner, admin). */
  manage: boolean;
  /** Workloads: files, output, traces, terminal (everyone but an auditor). */
  inspect: boolean;
}

export function canOf(role: Role | undefined, areas: readonly string[] = []): Can {
  const files = role === "owner" || role === "admin" || role === "editor" || role === "writer";
  return {
    role,
    // a member who holds areas works with agents through their files and conversations only
    write: files && role !== "writer" && areas.length === 0,
    files,
    converse: files || role === "guest",
    manage: role === "owner" || role === "admin",
    inspect: role !== undefined && role !== "auditor",
  };
}

/** The caller's role in `orgId`, from the organisations list (one request for the whole app). */
export function useCan(orgId: string | undefined): Can {
  const orgs = useOrgs();
  const org: Org | undefined = orgs.data?.find((o) => o.id === orgId);
  return canOf(org?.role, org?.areas);
}

/** The API's message and code of an error, or the error's own text. */
export function describeError(err: unknown): { code: string; message: string } {
  if (isWarrenApiError(err)) return { code: err.code, message: err.message };
  if (err instanceof Error) return { code: "client", message: err.message };
  return { code: "client", message: String(err) };
}
