// The oci provider's boot checks: its engine answers at the socket, the boxes' image exists
// there, and an OCI runtime of the engine's runs a box on this host, named (src/boot runs
// them; each refuses with one line that says the fix).
import type { HostProbe } from "../types.js";
import type { Engine } from "./engine.js";
import { choiceFix, describeChoice, type RuntimeChoice } from "./runtime.js";

export function ociProbes(
  engine: Engine,
  image: string,
  runtime: () => Promise<RuntimeChoice>,
): Record<string, HostProbe> {
  return {
    oci_engine: async () => {
      const r = await engine.request("GET", "/_ping", undefined, 5000).catch((err: unknown) => err);
      const ok = !(r instanceof Error) && (r as { status: number }).status === 200;
      return {
        ok,
        detail: ok ? `the engine answers at ${engine.socket}` : `no engine answers at ${engine.socket}`,
        fix: "start Podman's service with `scripts/oci.sh service` (or point WARREN_OCI_SOCKET at Docker's socket)",
      };
    },
    oci_image: async () => {
      const r = await engine
        .request("GET", `/images/${encodeURIComponent(image)}/json`, undefined, 5000)
        .catch(() => ({ status: 0 }));
      const ok = r.status === 200;
      return {
        ok,
        detail: ok ? `the image ${image} exists` : `the image ${image} is missing`,
        fix: "build it with `scripts/oci.sh image`",
      };
    },
    oci_runtime: async () => {
      const c = await runtime().catch((err: unknown) => err as Error);
      if (c instanceof Error)
        return {
          ok: false,
          detail: `not tried: ${c.message.split("; ")[0]}`,
          fix: "start Podman's service with `scripts/oci.sh service`",
        };
      return { ok: c.runtime !== null, detail: describeChoice(c), fix: choiceFix(c) };
    },
  };
}
