// The spellings of this host's loopback (and the unspecified address) that attacks on the
// address rule use: every wall that dials on an agent's behalf is tested against each.
export const LOOPBACK_SPELLINGS = [
  "[::1]",
  "0.0.0.0",
  "127.1",
  "2130706433",
  "0x7f000001",
  "[::ffff:127.0.0.1]",
  "localhost",
  "127.0.0.1.",
] as const;
