// The lists the contract owns, as plain values (no zod): the contract's schemas are built
// from them, and the store's columns, the server's services, the SDK and the operator app
// import them from here rather than spelling them again.

/** Members' roles in an organisation, from the most to the least they may do. */
export const ROLES = ["owner", "admin", "editor", "writer", "viewer", "auditor", "guest"] as const;

/** The roles that may decide an approval, and that a policy's `@deciders` may name. */
export const DECIDING_ROLES: readonly string[] = [
  "owner",
  "admin",
  "editor",
  "writer",
] satisfies (typeof ROLES)[number][];

/** How a machine's agents are walled from each other. */
export const TRUSTS = ["isolated", "shared"] as const;

/** The kinds of agent harness warren runs (their CLIs installed by scripts/harness.sh). */
export const HARNESS_KINDS = ["claude-code", "codex", "opencode"] as const;

/** Every kind of agent: a command, warren's assistant, a harness, or its machine's own image. */
export const AGENT_KINDS = ["command", "assistant", ...HARNESS_KINDS, "image"] as const;

/** A run's statuses (waiting: for a person's approval of a tool call); the last five are terminal. */
export const RUN_STATUSES = [
  "queued",
  "running",
  "waiting",
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "lost",
] as const;
export const TERMINAL_RUN_STATUSES = ["succeeded", "failed", "timed_out", "cancelled", "lost"] as const;

/** What a command may ask (exec and runs). */
export const COMMAND_LIMITS = {
  /** An exec's timeout when none is given, and the longest it may ask. */
  execTimeoutMsDefault: 60_000,
  execTimeoutMsMax: 24 * 3600 * 1000,
  /** The longest a run may ask to last (timeout_s, a spec's max_run_s). */
  runTimeoutSMax: 7 * 24 * 3600,
  /** A command's own memory and pids limits. */
  memoryMibMin: 16,
  memoryMibMax: 262144,
  pidsMax: 4096,
} as const;

/** The named keys a watcher may press (text goes as `text`). */
export const BROWSER_KEYS = [
  "Enter",
  "Tab",
  "Backspace",
  "Delete",
  "Escape",
  "ArrowLeft",
  "ArrowRight",
  "ArrowUp",
  "ArrowDown",
  "Home",
  "End",
  "PageUp",
  "PageDown",
] as const;
