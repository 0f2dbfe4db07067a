// The TypeScript names of the wire shapes, inferred from the schemas: answers as the server
// sends them (output), requests as a client may send them (input).
import type { z } from "zod";
import type * as agents from "./agents.js";
import type * as artifacts from "./artifacts.js";
import type * as common from "./common.js";
import type * as areas from "./areas.js";
import type * as connections from "./connections.js";
import type * as conversations from "./conversations.js";
import type * as flows from "./flows.js";
import type * as egress from "./egress.js";
import type * as exec from "./exec.js";
import type * as homes from "./homes.js";
import type * as machines from "./machines.js";
import type * as definitions from "./definitions.js";
import type * as environments from "./environments.js";
import type * as names from "./names.js";
import type * as orgs from "./orgs.js";
import type * as policy from "./policy.js";
import type * as runs from "./runs.js";
import type * as schedules from "./schedules.js";
import type * as secrets from "./secrets.js";
import type * as spec from "./spec.js";
import type * as terminal from "./terminal.js";
import type * as versions from "./versions.js";

type Out<T extends z.ZodType> = z.output<T>;
type In<T extends z.ZodType> = z.input<T>;

/** Every list answer: `{items: [...]}`. */
export interface List<T> {
  items: T[];
}

export type Role = Out<typeof common.Role>;

export type Org = Out<typeof orgs.Org>;
export type OrgCreateRequest = In<typeof orgs.OrgCreateRequest>;
export type OrgUpdateRequest = In<typeof orgs.OrgUpdateRequest>;
export type Member = Out<typeof orgs.Member>;
export type MemberRevision = Out<typeof orgs.MemberRevision>;
export type MemberSetRequest = In<typeof orgs.MemberSetRequest>;

export type MachineState = Out<typeof machines.MachineState>;
export type MachineTrust = Out<typeof machines.MachineTrust>;
export type Machine = Out<typeof machines.Machine>;
export type MachineCreateRequest = In<typeof machines.MachineCreateRequest>;
export type MachineUpdateRequest = In<typeof machines.MachineUpdateRequest>;
export type MachineListQuery = In<typeof common.orgIdQuery>;
export type MachineDefinitionText = Out<typeof definitions.MachineDefinitionText>;
export type MachineImportRequest = In<typeof definitions.MachineImportRequest>;
export type MachineImported = Out<typeof definitions.MachineImported>;

export type SandboxPolicy = Out<typeof policy.SandboxPolicy>;
export type EgressEvent = Out<typeof egress.EgressEvent>;
export type EgressList = Out<typeof egress.EgressList>;
export type EgressListQuery = Partial<Out<typeof egress.EgressListQuery>>;
export type SandboxPolicyInput = In<typeof policy.SandboxPolicy>;

export type AgentKind = Out<typeof spec.AgentKind>;
export type ModelSpec = Out<typeof spec.ModelSpec>;
export type ModelSpecInput = In<typeof spec.ModelSpec>;
export type ToolSpec = Out<typeof spec.ToolSpec>;
export type RunLimits = Out<typeof spec.RunLimits>;
export type RunLimitsInput = In<typeof spec.RunLimits>;
export type Agent = Out<typeof agents.Agent>;
export type AgentCreateRequest = In<typeof agents.AgentCreateRequest>;
export type AgentUpdateRequest = In<typeof agents.AgentUpdateRequest>;
export type AgentListQuery = In<typeof agents.AgentListQuery>;
export type Guild = Out<typeof agents.Guild>;
export type GuildCreateRequest = In<typeof agents.GuildCreateRequest>;
export type GuildListQuery = In<typeof common.orgIdQuery>;

export type CommandLimits = Out<typeof exec.CommandLimits>;
export type ExecRequest = In<typeof exec.ExecRequest>;
export type ExecResult = Out<typeof exec.ExecResult>;
export type ExecOutputEvent = Out<typeof exec.ExecOutputEvent>;
export type ExecExitEvent = Out<typeof exec.ExecExitEvent>;
export type ExecStreamEvent = ExecOutputEvent | ExecExitEvent;

export type Usage = Out<typeof homes.Usage>;
export type FolderListing = Out<typeof homes.FolderListing>;
export type Health = Out<typeof homes.Health>;
export type NameAnswer = Out<typeof names.NameAnswer>;
export type NameQuery = In<typeof names.NameQuery>;

export type RunStatus = Out<typeof runs.RunStatus>;
export type RunReceipt = Out<typeof runs.RunReceipt>;
export type Run = Out<typeof runs.Run>;
/** `kind` may be left out: it is `"command"`, and the SDK sends it. */
export type CommandRunCreateRequest = Omit<In<typeof runs.CommandRunCreateRequest>, "kind"> & {
  kind?: "command";
};
/** Runs the agent by its kind (assistant, claude-code, codex, opencode). */
export type AgentRunCreateRequest = In<typeof runs.AgentRunCreateRequest>;
export type RunCreateRequest = CommandRunCreateRequest | AgentRunCreateRequest;
export type RunUsage = Out<typeof runs.RunUsage>;
// Queries are typed by what they hold once parsed: the wire form is text.
export type RunListQuery = Partial<Out<typeof runs.RunListQuery>>;
export type RunEvent = Out<typeof runs.RunEvent>;
export type RunEventsQuery = Partial<Out<typeof runs.RunEventsQuery>>;

export type SecretGrant = Out<typeof secrets.SecretGrant>;
export type SecretUse = Out<typeof secrets.SecretUse>;
export type Secret = Out<typeof secrets.Secret>;
export type SecretCreateRequest = In<typeof secrets.SecretCreateRequest>;
export type SecretUpdateRequest = In<typeof secrets.SecretUpdateRequest>;
export type SecretListQuery = In<typeof secrets.SecretListQuery>;

export type ConnectionProvider = Out<typeof connections.ConnectionProvider>;
export type ConnectionProviderCreateRequest = In<typeof connections.ConnectionProviderCreateRequest>;
export type Connection = Out<typeof connections.Connection>;
export type ConnectionCreateRequest = In<typeof connections.ConnectionCreateRequest>;
export type ConnectionStarted = Out<typeof connections.ConnectionStarted>;

export type TerminalReady = Out<typeof terminal.TerminalReady>;
export type TerminalMessage = Out<typeof terminal.TerminalMessage>;
export type TerminalSignal = Out<typeof terminal.TerminalSignal>;

export type ConversationAuthor = Out<typeof conversations.ConversationAuthor>;
export type Conversation = Out<typeof conversations.Conversation>;
export type ConversationCreateRequest = In<typeof conversations.ConversationCreateRequest>;
export type ConversationForkRequest = In<typeof conversations.ConversationForkRequest>;
export type ConversationMessage = Out<typeof conversations.ConversationMessage>;
export type ConversationMessageCreated = Out<typeof conversations.ConversationMessageCreated>;
export type ConversationEvent = Out<typeof conversations.ConversationEvent>;
export type Persona = Out<typeof conversations.Persona>;
export type PersonaCreateRequest = In<typeof conversations.PersonaCreateRequest>;

export type ArtifactItem = Out<typeof artifacts.ArtifactItem>;
export type ArtifactWritten = Out<typeof artifacts.ArtifactWritten>;
export type ArtifactGrant = Out<typeof artifacts.ArtifactGrant>;
export type AccessList = Out<typeof artifacts.AccessList>;
export type Area = Out<typeof areas.Area>;
export type AreaRevision = Out<typeof areas.AreaRevision>;
export type ConversationDiff = Out<typeof conversations.ConversationDiff>;
export type VersionSummary = Out<typeof versions.VersionSummary>;
export type Version = Out<typeof versions.Version>;
export type VersionCreateRequest = In<typeof versions.VersionCreateRequest>;
export type Canary = Out<typeof versions.Canary>;
export type CanaryRequest = In<typeof versions.CanaryRequest>;
export type Approval = Out<typeof versions.Approval>;
export type ApprovalDecision = In<typeof versions.ApprovalDecision>;
export type EvalSuite = Out<typeof versions.EvalSuite>;
export type EvalSuiteRequest = In<typeof versions.EvalSuiteRequest>;
export type EvalRun = Out<typeof versions.EvalRun>;
export type EvalGate = Out<typeof versions.EvalGate>;
export type EvalGateHistory = Out<typeof versions.EvalGateHistory>;
export type Schedule = Out<typeof schedules.Schedule>;
export type ScheduleCreateRequest = In<typeof schedules.ScheduleCreateRequest>;
export type ScheduleUpdateRequest = In<typeof schedules.ScheduleUpdateRequest>;
export type ScheduleTriggered = Out<typeof schedules.ScheduleTriggered>;
export type GuildMessage = Out<typeof schedules.GuildMessage>;
export type GuildMessageRequest = In<typeof schedules.GuildMessageRequest>;
export type Flow = Out<typeof flows.Flow>;
export type FlowCreateRequest = In<typeof flows.FlowCreateRequest>;
export type FlowInstance = Out<typeof flows.FlowInstance>;
export type FlowInstanceCreateRequest = In<typeof flows.FlowInstanceCreateRequest>;
export type FlowUpdateRequest = In<typeof flows.FlowUpdateRequest>;
export type FlowReloadResponse = Out<typeof flows.FlowReloadResponse>;
export type FlowRunCreateRequest = In<typeof flows.FlowRunCreateRequest>;
export type FlowConversationCreateRequest = In<typeof flows.FlowConversationCreateRequest>;
export type MachineEnvironment = Out<typeof environments.MachineEnvironment>;
export type EnvRevision = Out<typeof environments.EnvRevision>;
export type EnvProposal = Out<typeof environments.EnvProposal>;
export type EnvironmentSetRequest = In<typeof environments.EnvironmentSetRequest>;
export type EnvProposalCreateRequest = In<typeof environments.EnvProposalCreateRequest>;
