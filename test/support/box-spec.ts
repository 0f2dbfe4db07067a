// A machine's box spec as the server hands one to a provider: its labels, its home, /data,
// the contracts (read-only) and a /tmp, the limits and, where asked, the egress bridge. The
// providers' unit tests build their boxes from it, each with its own names and sizes.
import type { BoxSpec } from "../../src/boxes/types.js";

export interface SampleSpec {
  id: string;
  org: string;
  provider: "local" | "oci" | "kubernetes";
  /** The server's state folder the spec's bind mounts come from. */
  state: string;
  cpus: number;
  tmpMib: number;
  /** The contracts folder is bound (default true). */
  contracts?: boolean;
  /** The egress bridge on 3128 (default none). */
  egress?: boolean;
}

export function sampleSpec(s: SampleSpec): BoxSpec {
  const bind = (source: string, target: string, readOnly: boolean) =>
    ({ kind: "bind", source: `${s.state}/${source}`, target, readOnly }) as const;
  return {
    id: s.id,
    labels: {
      "warren.kind": "machine",
      "warren.org": s.org,
      "warren.machine": s.id,
      "warren.provider": s.provider,
    },
    mounts: [
      bind(`workspaces/${s.id}`, "/home", false),
      bind("data", "/data", true),
      ...(s.contracts === false ? [] : [bind("contracts", "/opt/warren/contracts", true)]),
      { kind: "tmpfs", target: "/tmp", sizeMib: 64, mode: 0o1777 },
    ],
    limits: { memoryMib: 512, cpus: s.cpus, pids: 4096, tmpMib: s.tmpMib },
    ...(s.egress ? { bridges: [{ name: "egress", port: 3128 }] } : {}),
  };
}
