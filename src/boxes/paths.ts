// Where things are in every box, whatever the provider: what the runtime mounts, what the
// local provider binds from the host, and what a command's file access is built from.

/**
 * The bridges of every box: boxd listens on 127.0.0.1:port in the box and carries each
 * connection to the server, tagged with the connecting uid (docs/boxes.md, "Bridges").
 * The ports sit below the agents' port blocks (20000 and up), which agents alone may bind.
 */
export const BOX_BRIDGES = {
  /** The egress proxy (HTTP_PROXY and the like point here). */
  egress: 3128,
  /** The server's model and tool gateways, for harnesses in the box. */
  gateway: 3129,
} as const;
export type BridgeName = keyof typeof BOX_BRIDGES;

export const BOX_PATHS = {
  /** The host's system folders, read-only (those that exist). */
  system: ["/usr", "/bin", "/lib", "/lib64", "/sbin"],
  /** The box's /etc: an allowed part of the host's and the box's own names. */
  etc: "/etc",
  proc: "/proc",
  dev: "/dev",
  /** The machine's folder: one home per agent, /home/<agent id>. */
  homes: "/home",
  /** The machine's interception authority (its certificate, a bundle with it), read-only. */
  authority: "/home/.warren",
  /** Shared reference data, read-only. */
  data: "/data",
  contracts: "/opt/warren/contracts",
  /** warren's tools for agents' commands (warren-secret), read-only, on their PATH. */
  bin: "/opt/warren/bin",
  /** The harness CLIs installed on the host (claude-code, codex, opencode), read-only. */
  harness: "/opt/warren/harness",
  tmp: "/tmp",
  /** A run's input and instructions, read-only, that run only. */
  agent: "/agent",
  /** The agent's workspace by its class, read-write, bound per command. */
  workspace: "/workspace",
  /**
   * Machines' environment layers, read-only: a command reads only its own machine's
   * (`<machine id>/<revision>`, whose bin folders lead its PATH).
   */
  env: "/opt/warren/env",
  /** Every flow instance's workspace, bound per command at /workspace for its agents only. */
  flows: "/opt/warren/flows",
  /**
   * The runtime folder: `/run/warren/<agent id>` per agent (its uid's alone, 0700), outside
   * every home; the host's STATE_ROOT/run/<provider's boxes>/<box id>/warren, made with the
   * box and gone with it. Short-lived tokens (GitHub installation tokens) are written there.
   */
  runtime: "/run/warren",
} as const;
