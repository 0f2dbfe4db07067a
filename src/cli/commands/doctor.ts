// `warren doctor`: the server's boot checks on this host, without starting it.
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_FAILED, EXIT_OK } from "../context.js";

export const doctor = defineSingle(
  "doctor",
  "check this host for what boxes need",
  defineCommand({
    summary:
      "print the server's boot checks on this host (bubblewrap, namespaces, cgroups, Landlock, seccomp, fs.protected_symlinks, the state tree; on oci the engine, the image and the OCI runtime in use) and the OCI runtime oci would use; exits 1 when the server would refuse to start",
    parse: () => ({}),
    run: async (ctx) => {
      const { doctor: check } = await import("../../main.js");
      const code = await check(ctx.io.env, (text) => ctx.out(text));
      return code === 0 ? EXIT_OK : EXIT_FAILED;
    },
  }),
);
