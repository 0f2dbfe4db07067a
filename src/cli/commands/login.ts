// `warren login`: checks a personal token (made in the app, or POST /api/auth/tokens) with the
// server and stores it for this server's later commands (../credentials.ts).
import { LocalError } from "../context.js";
import { defineCommand, defineSingle } from "../command.js";
import { storeToken } from "../credentials.js";

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  let text = "";
  for await (const chunk of stdin)
    text += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
  return text.trim();
}

export const login = defineSingle(
  "login",
  "store a personal token for the server",
  defineCommand({
    summary:
      "check a personal API token with the server and store it for later commands (read from --token, else stdin); --forget removes the stored one",
    args: [],
    options: [
      { name: "token", value: "<token>", help: "the personal token (wpt_...); default: read from stdin" },
      { name: "forget", help: "remove the token stored for this server" },
    ],
    parse: (i) => ({ token: i.str("token"), forget: i.flag("forget") }),
    run: async (ctx, p) => {
      const { url } = ctx.globals;
      if (p.forget) {
        const file = await storeToken(ctx.io.env, url, undefined);
        return ctx.show({ url, file }, () => `forgot the token of ${new URL(url).origin} (${file})`);
      }
      const token = p.token ?? (await readStdin(ctx.io.stdin));
      if (!/^wpt_\S+$/.test(token))
        throw new LocalError("request.invalid", "a personal token starts with wpt_");
      const f = ctx.io.fetch ?? fetch;
      const res = await f(new URL("/api/auth/me", url), { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json().catch(() => ({}))) as {
        email?: string;
        error?: { code: string; message: string };
      };
      if (!res.ok || !body.email)
        throw new LocalError(
          body.error?.code ?? "auth.required",
          body.error?.message ?? `the server answered ${res.status}`,
        );
      const file = await storeToken(ctx.io.env, url, token);
      return ctx.show(
        { email: body.email, url, file },
        () => `signed in to ${new URL(url).origin} as ${body.email}; the token is stored in ${file}`,
      );
    },
  }),
);
