// What the oci provider would run boxes with, for `warren doctor` on another provider: the
// engine's answer when one answers at WARREN_OCI_SOCKET (./runtime.ts, as the provider
// finds it), else what `scripts/oci.sh service` would start Podman's service with (its
// `runtime`: the same kind of trial, through podman itself).
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "../kit/logger.js";
import { Engine } from "./engine.js";
import { chooseRuntime, describeChoice, type OciRuntime } from "./runtime.js";

/** The last lines of the script's refusals, one line. */
const reasons = (stderr: string): string =>
  stderr
    .split("\n")
    .map((l) => l.replace(/^oci\.sh: /, "").trim())
    .filter(Boolean)
    .join("; ");

/** What `scripts/oci.sh runtime` picks on this host, or why it cannot say. */
function scriptRuntime(wanted: OciRuntime | undefined): Promise<string> {
  const script = path.join(packageRoot, "scripts", "oci.sh");
  if (!fs.existsSync(script)) return Promise.resolve("not tried (scripts/oci.sh is not here)");
  return new Promise((resolve) => {
    execFile(
      "sh",
      [script, "runtime"],
      { timeout: 60_000, env: { ...process.env, WARREN_OCI_RUNTIME: wanted ?? "" } },
      (err, stdout, stderr) => {
        const why = reasons(stderr);
        if (!err)
          resolve(
            `${stdout.trim()}, as \`scripts/oci.sh service\` would start Podman's service${why ? `; ${why}` : ""}`,
          );
        else if (/podman: (command )?not found|podman: No such file/i.test(stderr))
          resolve("none: podman is not installed (scripts/setup.sh installs it)");
        else resolve(`none: ${why || err.message}`);
      },
    );
  });
}

/** One line: the runtime oci boxes would run with here, and how that was found. */
export async function ociRuntimeReport(o: {
  socket: string;
  image: string;
  wanted: OciRuntime | undefined;
}): Promise<string> {
  const engine = new Engine(o.socket);
  const up = await engine.request("GET", "/_ping", undefined, 5000).then(
    (r) => r.status === 200,
    () => false,
  );
  let where = `no engine answers at ${o.socket}`;
  if (up) {
    const c = await chooseRuntime(engine, o.image, o.wanted).catch((err: unknown) => err as Error);
    if (c instanceof Error) where = `the engine at ${o.socket}: ${c.message}`;
    else if (c.untried) where = `the engine at ${o.socket} has no image ${o.image}`;
    else return `${describeChoice(c)} (the engine at ${o.socket})`;
  }
  return `${await scriptRuntime(o.wanted)} (${where})`;
}
