// warren/sdk: the typed client of warren's HTTP API.
export { WarrenClient } from "./client.js";
export { AgentHandle, AgentFiles, AgentRuns, execBody, isExecExit } from "./agent.js";
export { OrgsApi, MachinesApi, AgentsApi, GuildsApi } from "./resources.js";
export { SecretsApi } from "./secrets.js";
export { ConnectionsApi } from "./connections.js";
export { OrgArtifacts } from "./artifacts.js";
export type { ArtifactRevision } from "./artifacts.js";
export { AgentVersions, ApprovalsApi } from "./versions.js";
export { FlowsApi } from "./flows.js";
export {
  AgentConversations,
  AgentPersonas,
  ConversationsApi,
  MAX_MESSAGE_BYTES,
  PersonasApi,
} from "./conversations.js";
export type { ConversationStreamEvent } from "./conversations.js";
export { AgentSchedules, SchedulesApi } from "./schedules.js";
export { sseMessages, streamEventOf } from "./sse.js";
export type { SseMessage, StreamEvent, StreamOptions } from "./sse.js";
export { AgentTerminal, TerminalConnection } from "./terminal.js";
export type { TerminalConnectOptions, TerminalEnd } from "./terminal.js";
export { RunsApi, TERMINAL_RUN_STATUSES, isTerminalRunStatus } from "./runs.js";
export { traceEntries, traceSummary } from "./trace.js";
export type { TraceEntry, TraceEvent } from "./trace.js";
export { AGENT_KINDS, BROWSER_KEYS, HARNESS_KINDS, ROLES, TRUSTS } from "./lists.js";
export { WarrenApiError, isWarrenApiError } from "./errors.js";
export type { ClientErrorCode, ErrorCode, WarrenErrorCode } from "./errors.js";

export type { AskAnswer, ExecCommand, ExecOptions } from "./agent.js";
export type { WaitOptions } from "./runs.js";
export type { WarrenClientOptions, RequestOptions } from "./transport.js";
/** Every wire shape the API sends and takes, named as the server's contract names it. */
export type * from "./types.js";
