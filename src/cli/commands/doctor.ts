// `warren doctor`: the server's boot checks on this host, without starting it, and then the
// server the CLI is pointed at (--url, else $WARREN_URL, else the default): whether it answers,
// is ready (and what it runs without), and takes the caller's identity.
import { WarrenApiError } from "../../sdk/index.js";
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_FAILED, EXIT_OK, type Context } from "../context.js";
import { DEFAULT_URL } from "../options.js";

/** The server's state as one line, and whether it is one the CLI can work with. */
async function serverReport(ctx: Context): Promise<{ line: string; ok: boolean }> {
  const at = `server at ${ctx.globals.url}`;
  let health;
  try {
    health = await ctx.client.health({ timeoutMs: 10_000 });
  } catch (err) {
    if (err instanceof WarrenApiError && err.status === 503)
      return { line: `${at}: starting, not ready yet`, ok: false };
    const why = err instanceof Error ? err.message : String(err);
    return {
      line: `${at}: not answering (${why}); start one with \`make up\` or point --url at it`,
      ok: false,
    };
  }
  const degraded = health.degraded?.length ? ` without ${health.degraded.join(", ")} (accepted)` : "";
  try {
    const orgs = await ctx.client.orgs.list({ timeoutMs: 10_000 });
    return {
      line: `${at}: ready${degraded}; you are a member of ${orgs.items.length} organisation(s)`,
      ok: true,
    };
  } catch (err) {
    if (err instanceof WarrenApiError)
      return { line: `${at}: ready${degraded}, but it refuses you: ${err.code} (${err.message})`, ok: false };
    throw err;
  }
}

export const doctor = defineSingle(
  "doctor",
  "check this host and the server the CLI is pointed at",
  defineCommand({
    summary:
      "print the server's boot checks on this host (bubblewrap, namespaces, cgroups, Landlock, seccomp, fs.protected_symlinks, the state tree; on oci the engine, the image and the OCI runtime in use) and the OCI runtime oci would use, then whether the server at --url answers, is ready and takes your identity; exits 1 when this host's server would refuse to start or the server named by --url or $WARREN_URL is not ready for you",
    parse: () => ({}),
    run: async (ctx) => {
      const { doctor: check } = await import("../../main.js");
      const code = await check(ctx.io.env, (text) => ctx.out(text));
      const server = await serverReport(ctx);
      await ctx.out(`${server.line}\n`);
      // a server asked for by name must answer; the default address is only looked at
      const named = ctx.globals.url !== DEFAULT_URL;
      return code === 0 && (server.ok || !named) ? EXIT_OK : EXIT_FAILED;
    },
  }),
);
