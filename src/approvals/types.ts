// The approval door's types: what a tool call that asks for a person's decision sends, what
// it gets back, and how a wait outlives a server that stops.

/** One exact tool call that waits for a person's decision (a permit annotated `@approval("required")`). */
export interface ApprovalAsk {
  runId: string;
  toolCallId: string;
  tool: string;
  /** The arguments as the record shows them (redacted). */
  arguments: unknown;
  /** SHA-256 of the canonical arguments the call would run with (hex). */
  argsSha256: string;
  /** The deciding policies' ids. */
  policies: string[];
  /** Who the asking permits name to decide (emails, roles); empty: owners, admins, editors. */
  deciders: string[];
}

export interface ApprovalAnswer {
  decision: "allow" | "deny";
  message: string | null;
  decidedBy: string | null;
}

/**
 * Why ApprovalDoor.ask did not answer: the server stopped while the call waited. The approval
 * stays waiting for the next server, which takes the run up again (src/runs/resume.ts).
 */
export class ApprovalSuspended extends Error {
  constructor() {
    super("the server stopped while the call waited for a decision");
  }
}

/**
 * Why a wait ended without a decision before its run did (a signal aborted with it): its
 * approval expires saying this message, and the answer is a denial decided by nobody.
 */
export class ApprovalExpired extends Error {}

/**
 * Keeps where the run's loop stands, redacted, while a call of it waits for a decision (the
 * run loop's: src/runs/assistant.ts): a server that dies meanwhile leaves it for the next
 * one to take the run up from (src/runs/resume.ts).
 */
export type KeepWaiting = () => Promise<void>;

/** Where a call that asks waits for its decision (src/approvals/service.ts). */
export interface ApprovalDoor {
  ask(req: ApprovalAsk, signal: AbortSignal, keep?: KeepWaiting): Promise<ApprovalAnswer>;
}
