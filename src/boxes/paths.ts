// Where things are in every box, whatever the provider: what the runtime mounts, what the
// local provider binds from the host, and what a command's file access is built from.

export const BOX_PATHS = {
  /** The host's system folders, read-only (those that exist). */
  system: ["/usr", "/bin", "/lib", "/lib64", "/sbin"],
  /** The box's /etc: an allowed part of the host's and the box's own names. */
  etc: "/etc",
  proc: "/proc",
  dev: "/dev",
  /** The machine's folder: one home per agent, /home/<agent id>. */
  homes: "/home",
  /** Shared reference data, read-only. */
  data: "/data",
  contracts: "/opt/warren/contracts",
  /** warren's tools for agents' commands (warren-secret), read-only, on their PATH. */
  bin: "/opt/warren/bin",
  tmp: "/tmp",
  /** A run's input and instructions, read-only, that run only. */
  agent: "/agent",
} as const;
