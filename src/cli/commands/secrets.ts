// `warren secrets ...`: secrets by name, description and grants. A value is read from stdin
// or --value-file, never from an argument (arguments end up in shell history and `ps`).
import type { Secret, SecretGrant } from "../../sdk/index.js";
import { defineCommand, defineGroup, UsageError, type Input } from "../command.js";
import { EXIT_OK, LocalError } from "../context.js";
import { detailView, listView, type Column } from "../format.js";
import { orgOption } from "../options.js";

const grantsText = (s: Secret) => s.grants.map((g) => `${g.scope}:${g.id}`).join(",") || "-";

export const secretColumns: Column<Secret>[] = [
  { header: "ID", value: (s) => s.id },
  { header: "NAME", value: (s) => s.name },
  { header: "USE", value: (s) => s.use },
  { header: "ORG", value: (s) => s.org_id },
  { header: "GRANTS", value: grantsText },
  { header: "DESCRIPTION", value: (s) => (s.alias_of ? `alias of ${s.alias_of}` : s.description) },
];

const scopes: Record<string, SecretGrant["scope"]> = { org: "org", gld: "guild", agt: "agent" };

/** A grant from the id it names: org_... (the organisation), gld_... (a guild), agt_... (an agent). */
export function parseGrant(text: string, topic?: string): SecretGrant {
  const scope = scopes[text.slice(0, 3)];
  if (!scope || !/^(org|gld|agt)_[0-9a-z]{16}$/.test(text))
    throw new UsageError(`a grant is an org_, gld_ or agt_ id, not "${text}"`, topic);
  return { scope, id: text };
}

/** The value as read: one trailing newline (what `echo` and editors add) is dropped. */
export function valueOf(bytes: Buffer): string {
  const text = bytes.toString("utf8");
  return text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
}

const secretArg = (i: Input) => ({ id: i.arg("secret") });
const grantArgs = (topic: string) => (i: Input) => ({
  id: i.arg("secret"),
  grant: parseGrant(i.arg("target"), topic),
});

export const secrets = defineGroup("secrets", "secrets: values commands get as variables", {
  create: defineCommand({
    summary: "create a secret; its value comes from stdin or --value-file, never an argument",
    args: ["name"],
    options: [
      orgOption,
      { name: "description", value: "<text>", help: "what it is for (members read this)" },
      {
        name: "value-file",
        value: "<file>",
        help: "read the value from this file (default: stdin; one trailing newline is dropped)",
      },
      { name: "alias-of", value: "<secret>", help: "make the name an alias of another secret's value" },
      {
        name: "use",
        value: "<env|model|tool>",
        help: "env (default): commands get it as a variable; model: a model's key, only the model gateway reads it; tool: a tool header's value, only the tool gateway reads it",
      },
      {
        name: "grant",
        value: "<id>",
        repeatable: true,
        help: "who it reaches: an org_, gld_ or agt_ id; repeatable",
      },
      {
        name: "host",
        value: "<host[:port]>",
        repeatable: true,
        help: "use model: a host its value may be sent to (default: the provider's official API host); repeatable",
      },
    ],
    required: ["org"],
    parse: (i) => {
      const aliasOf = i.str("alias-of");
      const valueFile = i.str("value-file");
      if (aliasOf !== undefined && valueFile !== undefined)
        throw i.error("an alias has no value of its own: give --alias-of or --value-file, not both");
      const use = i.str("use");
      if (use !== undefined && use !== "env" && use !== "model" && use !== "tool")
        throw i.error("--use is env, model or tool");
      const uses: Record<string, "env" | "model" | "tool"> = { env: "env", model: "model", tool: "tool" };
      const hosts = i.list("host");
      if (hosts !== undefined && use !== "model") throw i.error("--host is for a key: give --use model");
      return {
        body: {
          org_id: i.need("org"),
          name: i.arg("name"),
          description: i.str("description"),
          alias_of: aliasOf,
          ...(use !== undefined ? { use: uses[use] } : {}),
          grants: (i.list("grant") ?? []).map((g) => parseGrant(g, "secrets create")),
          ...(hosts !== undefined ? { hosts } : {}),
        },
        valueFile: aliasOf === undefined ? (valueFile ?? "-") : undefined,
      };
    },
    run: async (ctx, p) => {
      const value =
        p.valueFile === undefined ? undefined : valueOf(await ctx.readLocal(p.valueFile, "the value file"));
      const s = await ctx.client.secrets.create({ ...p.body, ...(value !== undefined ? { value } : {}) });
      return ctx.show(s, () => detailView(s));
    },
  }),
  list: defineCommand({
    summary: "list secrets (of one organisation with --org): names and grants, never values",
    options: [orgOption],
    parse: (i) => ({ orgId: i.str("org") }),
    run: async (ctx, p) => {
      const list = await ctx.client.secrets.list({ org_id: p.orgId });
      return ctx.show(list, () => listView("secrets", secretColumns, list.items));
    },
  }),
  get: defineCommand({
    summary: "show a secret: its name, description and grants, never its value",
    args: ["secret"],
    parse: secretArg,
    run: async (ctx, p) => {
      const s = await ctx.client.secrets.get(p.id);
      return ctx.show(s, () => detailView(s));
    },
  }),
  update: defineCommand({
    summary: "change a secret's description, or move a secret of use env to use tool (owners, admins)",
    args: ["secret"],
    options: [
      { name: "description", value: "<text>", help: "what it is for (members read this)" },
      {
        name: "use",
        value: "<tool>",
        help: "tool: only the tool gateway reads it from now on, no command (the one change of use)",
      },
    ],
    parse: (i) => {
      const use = i.str("use");
      if (use !== undefined && use !== "tool") throw i.error("--use can only be tool (env moves to tool)");
      const description = i.str("description");
      if (use === undefined && description === undefined) throw i.error("give --description or --use tool");
      return {
        id: i.arg("secret"),
        body: {
          ...(description !== undefined ? { description } : {}),
          ...(use !== undefined ? { use: "tool" as const } : {}),
        },
      };
    },
    run: async (ctx, p) => {
      const s = await ctx.client.secrets.update(p.id, p.body);
      return ctx.show(s, () => detailView(s));
    },
  }),
  delete: defineCommand({
    summary: "delete a secret and its aliases",
    args: ["secret"],
    parse: secretArg,
    run: async (ctx, p) => {
      await ctx.client.secrets.delete(p.id);
      return ctx.show(undefined, () => `deleted ${p.id}\n`);
    },
  }),
  grant: defineCommand({
    summary: "let a secret reach an organisation (org_), a guild (gld_) or an agent (agt_)",
    args: ["secret", "target"],
    parse: grantArgs("secrets grant"),
    run: async (ctx, p) => {
      const s = await ctx.client.secrets.grant(p.id, p.grant);
      return ctx.show(s, () => `${p.id} reaches ${grantsText(s)}\n`);
    },
  }),
  revoke: defineCommand({
    summary: "take a grant of a secret away",
    args: ["secret", "target"],
    parse: grantArgs("secrets revoke"),
    run: async (ctx, p) => {
      const s = await ctx.client.secrets.revoke(p.id, p.grant);
      return ctx.show(s, () => `${p.id} reaches ${grantsText(s)}\n`);
    },
  }),
  hosts: defineCommand({
    summary:
      "set the hosts a model key may be sent to (owners and admins); none given: only the provider's official host",
    args: ["secret"],
    options: [
      orgOption,
      {
        name: "host",
        value: "<host[:port]>",
        repeatable: true,
        help: "a host the key may be sent to, such as api.openai.com or 10.0.0.5:8000; repeatable",
      },
    ],
    parse: (i) => ({ id: i.arg("secret"), orgId: i.str("org"), hosts: i.list("host") ?? [] }),
    run: async (ctx, p) => {
      // the secret's id, or its name as --key-secret takes it (in --org when names repeat)
      let id = p.id;
      if (!/^sec_[0-9a-z]{16}$/.test(id)) {
        const named = (await ctx.client.secrets.list({ org_id: p.orgId })).items.filter((x) => x.name === id);
        const [only] = named;
        if (!only) throw new LocalError("not_found", `no secret named ${id} is visible to you`);
        if (named.length > 1)
          throw new LocalError(
            "name.ambiguous",
            `${named.length} secrets are named ${id}: ${named.map((x) => `${x.id} (in ${x.org_id})`).join(", ")}; give --org or an id`,
          );
        id = only.id;
      }
      const s = await ctx.client.secrets.update(id, { hosts: p.hosts });
      return ctx.show(
        s,
        () => `${p.id} may be sent to ${s.hosts.join(",") || "its provider's official host"}\n`,
      );
    },
  }),
  "rotate-key": defineCommand({
    summary:
      "re-seal every secret under a new master key in one transaction (run it with the server stopped)",
    options: [
      {
        name: "new-key-file",
        value: "<file>",
        help: "the new key, 64 hex characters (default: a new random key, with the development key file)",
      },
    ],
    parse: (i) => ({ newKeyFile: i.str("new-key-file") }),
    run: async (ctx, p) => {
      const { rotateKey } = await import("../../main.js");
      let r;
      try {
        r = await rotateKey(ctx.io.env, { newKeyFile: p.newKeyFile });
      } catch (err) {
        if (err instanceof Error && (err.name === "MasterKeyError" || err.name === "ConfigError"))
          throw new LocalError("local.key", err.message);
        throw err;
      }
      await ctx.show(r, () =>
        r.file
          ? `re-sealed ${r.secrets} secrets; the new key is in ${r.file}\n`
          : `re-sealed ${r.secrets} secrets; set WARREN_MASTER_KEY to the new key before the next start\n`,
      );
      return EXIT_OK;
    },
  }),
});
