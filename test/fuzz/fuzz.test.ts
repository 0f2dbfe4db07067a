// Random bodies, bytes, content types and path ids against every route: never a 5xx (the exec
// route may answer 503 box.unavailable), and every error is the envelope with a string code.
// The seed is printed; WARREN_FUZZ_SEED=<n> replays a run, WARREN_FUZZ_ROUNDS=<n> sets its size.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { InjectOptions } from "fastify";
import { startTestServer, type TestServer } from "../support/server.js";
import { assertEnvelope, show } from "../http/expect.js";

const seed = process.env.WARREN_FUZZ_SEED ? Number(process.env.WARREN_FUZZ_SEED) : randomInt(2 ** 31);
const ROUNDS = Number(process.env.WARREN_FUZZ_ROUNDS ?? 1200);

/** mulberry32: small, seedable, good enough to pick cases. */
function prng(s: number): () => number {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(private readonly r: () => number) {}
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }

  string(): string {
    switch (this.int(14)) {
      case 0:
        return "";
      case 1:
        return "x".repeat(this.pick([101, 257, 4097, 70_000, 300_000]));
      case 2:
        return this.pick([
          "NaN",
          "Infinity",
          "-Infinity",
          "-0",
          "1e309",
          "0x10",
          "null",
          "undefined",
          "true",
          "[]",
          "{}",
        ]);
      case 3:
        return this.pick(["héllo", "日本語", "🦫🦫", "\u202e\u200b", "\ud800", "\udfff", "Ａ", "a\u0301"]);
      case 4:
        return `a\u0000b${"\u0000".repeat(this.int(4))}`;
      case 5:
        return this.pick(["\n", "\r\n", "\t", "\u001b[31m", "\u007f", " ", "   "]);
      case 6:
        return this.id();
      case 7:
        return this.pick(["../../etc/passwd", "/etc/shadow", "/", "//", "/home/../root", "C:\\Windows", "~"]);
      case 8:
        return this.pick([
          "'; DROP TABLE agents; --",
          '" OR 1=1 --',
          "$(id)",
          "`id`",
          "%s%s%n",
          "{{7*7}}",
          "<script>",
          "\\",
        ]);
      case 9:
        return this.pick([
          "*",
          "*.com",
          "*.example.com",
          "example.com:0",
          "example.com:65536",
          "1.2.3.4:80",
          "localhost",
          "::1",
        ]);
      case 10:
        return this.pick(["owner", "admin", "editor", "viewer", "auditor", "isolated", "shared", "root"]);
      case 11:
        return this.pick(["a@b.c", "operator@localhost", "x@", "@x", "a b@c", `${"a".repeat(200)}@b.c`]);
      case 12:
        return Array.from({ length: this.int(40) }, () => String.fromCharCode(this.int(0x3000))).join("");
      default:
        return Array.from({ length: 1 + this.int(12) }, () => String.fromCharCode(32 + this.int(95))).join(
          "",
        );
    }
  }

  number(): number {
    return this.pick([
      0,
      -0,
      1,
      -1,
      0.5,
      1.5,
      -1e-300,
      63,
      64,
      65,
      100,
      1024,
      10240,
      10241,
      262144,
      262145,
      2 ** 31,
      2 ** 31 - 1,
      2 ** 53,
      2 ** 53 + 2,
      Number.MAX_SAFE_INTEGER,
      Number.MIN_SAFE_INTEGER,
      Number.MAX_VALUE,
      Number.MIN_VALUE,
      -Number.MAX_VALUE,
      1e21,
      1e308,
      this.r() * 1e6 - 5e5,
      this.int(100000),
    ]);
  }

  id(): string {
    const prefix = this.pick(["org", "mch", "agt", "gld", "usr", "run", "sec", "xyz", "ORG"]);
    const body = Array.from({ length: this.pick([15, 16, 16, 16, 17]) }, () =>
      this.pick([..."0123456789abcdefghijklmnopqrstuvwxyz"]),
    ).join("");
    return `${prefix}_${body}`;
  }

  key(): string {
    return this.pick([
      "__proto__",
      "constructor",
      "prototype",
      "toString",
      "valueOf",
      "hasOwnProperty",
      "name",
      "org_id",
      "machine_id",
      "agent_id",
      "max_workspace_mib",
      "sandbox_policy",
      "argv",
      "command",
      "env",
      "email",
      "role",
      "trust",
      "",
      "\u0000",
      "a".repeat(1000),
      this.string(),
    ]);
  }

  /** A random JSON value, `depth` levels at most. */
  value(depth = 4): unknown {
    const k = this.int(depth <= 0 ? 5 : 9);
    switch (k) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.number();
      case 3:
      case 4:
        return this.string();
      case 5:
      case 6:
        return Array.from({ length: this.int(6) }, () => this.value(depth - 1));
      case 7:
        return this.object(depth - 1);
      default:
        return this.deep();
    }
  }

  object(depth = 3): Record<string, unknown> {
    const o: Record<string, unknown> = {};
    const n = this.int(6);
    for (let i = 0; i < n; i++)
      Object.defineProperty(o, this.key(), {
        value: this.value(depth),
        enumerable: true,
        configurable: true,
        writable: true,
      });
    return o;
  }

  /** Very deep nesting, as JSON text spliced in by jsonText (JSON.stringify itself would overflow). */
  deep(): Deep {
    const n = this.pick([50, 1000, 20_000]);
    const arrays = this.chance(0.5);
    const leaf = this.chance(0.5) ? "1" : '"x"';
    return new Deep(
      arrays ? `${"[".repeat(n)}${leaf}${"]".repeat(n)}` : `${'{"a":'.repeat(n)}${leaf}${"}".repeat(n)}`,
    );
  }
}

class Deep {
  constructor(readonly text: string) {}
}

/** A JSON text of a generated value, with deep parts spliced in. */
function jsonText(v: unknown): string {
  const deep: string[] = [];
  const text = JSON.stringify(v, (_k, x: unknown) => {
    if (x instanceof Deep) {
      deep.push(x.text);
      return `\u0001deep${deep.length - 1}\u0001`;
    }
    return x;
  });
  if (text === undefined) return "null";
  return text.replace(/"\\u0001deep(\d+)\\u0001"/g, (_m, i: string) => deep[Number(i)] as string);
}

/**
 * The only 5xx answers allowed: 503 box.unavailable from a route that starts the agent's box
 * (exec, runs, ports, files, usage), 502 port.unreachable from the port proxy.
 */
function allowed5xx(url: string, status: number, body: unknown): boolean {
  const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
  const boxRoute =
    /^\/api\/agents\/[^/?]+\/(exec|runs|ports|files|usage)([/?]|$)/.test(url) || url.startsWith("/api/runs/");
  if (status === 503 && code === "box.unavailable") return boxRoute;
  if (status === 502 && code === "port.unreachable") return /^\/api\/agents\/[^/?]+\/ports\//.test(url);
  return false;
}

/** Percent-encodes the UTF-8 bytes of a string (lone surrogates included, as U+FFFD). */
function pct(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8"))
    out += /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
      ? String.fromCharCode(b)
      : `%${b.toString(16).padStart(2, "0").toUpperCase()}`;
  return out;
}

interface Fixtures {
  org: string;
  machine: string;
  agent: string;
  guild: string;
  user: string;
  /** A run of the agent, or a well-formed id that names nothing when runs cannot start here. */
  run: string;
}

type Kind = "org" | "mch" | "agt" | "gld" | "usr" | "run" | "any";

interface RouteCase {
  method: string;
  /** The path with :id-style placeholders. */
  url: string;
  /** A valid body, mutated by the fuzzer. */
  valid?: (f: Fixtures) => Record<string, unknown>;
}

const routes: RouteCase[] = [
  { method: "POST", url: "/api/orgs", valid: () => ({ name: "fuzz" }) },
  { method: "GET", url: "/api/orgs" },
  { method: "GET", url: "/api/orgs/:org" },
  { method: "PATCH", url: "/api/orgs/:org", valid: () => ({ name: "fuzz" }) },
  { method: "DELETE", url: "/api/orgs/:org" },
  { method: "GET", url: "/api/orgs/:org/members" },
  {
    method: "PUT",
    url: "/api/orgs/:org/members",
    valid: () => ({ email: "fuzz@example.com", role: "viewer" }),
  },
  { method: "DELETE", url: "/api/orgs/:org/members/:usr" },
  {
    method: "POST",
    url: "/api/machines",
    valid: (f) => ({
      org_id: f.org,
      name: "m",
      max_workspace_mib: 1024,
      memory_mib: 256,
      cpus: 1,
      trust: "shared",
    }),
  },
  { method: "GET", url: "/api/machines" },
  { method: "GET", url: "/api/machines/:mch" },
  {
    method: "PATCH",
    url: "/api/machines/:mch",
    valid: () => ({ name: "m", max_workspace_mib: 2048, memory_mib: 512, cpus: 2 }),
  },
  { method: "POST", url: "/api/machines/:mch/stop" },
  { method: "DELETE", url: "/api/machines/:mch" },
  {
    method: "POST",
    url: "/api/agents",
    valid: (f) => ({ org_id: f.org, machine_id: f.machine, name: "a", max_workspace_mib: 10 }),
  },
  { method: "GET", url: "/api/agents" },
  { method: "GET", url: "/api/agents/:agt" },
  {
    method: "PATCH",
    url: "/api/agents/:agt",
    valid: () => ({
      name: "a",
      max_workspace_mib: 20,
      sandbox_policy: { files: { read: ["/opt"], write: [] }, network: { allow: ["example.com:443"] } },
    }),
  },
  { method: "DELETE", url: "/api/agents/:agt" },
  { method: "POST", url: "/api/agents/:agt/exec", valid: () => ({ argv: ["/bin/true"], timeout_ms: 1000 }) },
  {
    method: "POST",
    url: "/api/agents/:agt/runs",
    valid: () => ({ kind: "command", argv: ["/bin/true"], input: "in", timeout_s: 5 }),
  },
  { method: "POST", url: "/api/guilds", valid: (f) => ({ org_id: f.org, name: "g" }) },
  { method: "GET", url: "/api/guilds" },
  { method: "GET", url: "/api/guilds/:gld" },
  { method: "DELETE", url: "/api/guilds/:gld" },
  { method: "POST", url: "/api/guilds/:gld/agents", valid: (f) => ({ agent_id: f.agent }) },
  { method: "DELETE", url: "/api/guilds/:gld/agents/:agt" },
  { method: "GET", url: "/health" },
  { method: "GET", url: "/api/openapi.json" },
];

const contentTypes = [
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=latin1",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/octet-stream",
  "application/xml",
  "application/json, text/plain",
  ";;;",
  "application/",
  "*/*",
  "",
];

describe(`fuzz (seed ${seed}, ${ROUNDS} requests; replay with WARREN_FUZZ_SEED=${seed})`, () => {
  let t: TestServer;
  let f: Fixtures;
  const g = new Gen(prng(seed));
  const tally = { requests: 0, byStatus: new Map<number, number>() };

  /** The fixtures exist and the operator still owns the organisation; made again when a fuzzed request removed them. */
  async function ensureFixtures(): Promise<void> {
    const ok = async (url: string) => (await t.inject({ method: "GET", url })).statusCode === 200;
    const orgOk =
      f &&
      (await ok(`/api/orgs/${f.org}`)) &&
      (await t.call("GET", `/api/orgs/${f.org}`)).body.role === "owner";
    if (!orgOk) {
      const o = await t.call("POST", "/api/orgs", { name: "fuzz-org" });
      assert.equal(o.status, 201);
      f = { org: o.body.id, machine: "", agent: "", guild: "", user: "", run: "" };
    }
    if (!f.machine || !(await ok(`/api/machines/${f.machine}`))) {
      const m = await t.call("POST", "/api/machines", {
        org_id: f.org,
        name: "fuzz-machine",
        max_workspace_mib: 4096,
      });
      assert.equal(m.status, 201);
      f.machine = m.body.id;
    }
    if (!f.agent || !(await ok(`/api/agents/${f.agent}`))) {
      const a = await t.call("POST", "/api/agents", {
        org_id: f.org,
        machine_id: f.machine,
        name: "fuzz-agent",
        max_workspace_mib: 10,
      });
      assert.equal(a.status, 201);
      f.agent = a.body.id;
    }
    if (!f.guild || !(await ok(`/api/guilds/${f.guild}`))) {
      const gl = await t.call("POST", "/api/guilds", { org_id: f.org, name: "fuzz-guild" });
      assert.equal(gl.status, 201);
      f.guild = gl.body.id;
      assert.equal(
        (await t.call("POST", `/api/guilds/${f.guild}/agents`, { agent_id: f.agent })).status,
        204,
      );
    }
    const members = (await t.call("GET", `/api/orgs/${f.org}/members`)).body.items as {
      user_id: string;
      email: string;
    }[];
    let member = members.find((m) => m.email === "member@example.com");
    if (!member) {
      const r = await t.call("PUT", `/api/orgs/${f.org}/members`, {
        email: "member@example.com",
        role: "viewer",
      });
      assert.equal(r.status, 200);
      member = r.body;
    }
    f.user = member!.user_id;
    if (!f.run || !(await ok(`/api/runs/${f.run}`))) {
      const r = await t.call("POST", `/api/agents/${f.agent}/runs`, {
        kind: "command",
        argv: ["/bin/true"],
        timeout_s: 5,
      });
      f.run = r.status === 202 ? (r.body.id as string) : "run_zzzzzzzzzzzzzzzz";
    }
  }

  function pathId(kind: Kind): string {
    const real = {
      org: f.org,
      mch: f.machine,
      agt: f.agent,
      gld: f.guild,
      usr: f.user,
      run: f.run,
      any: g.id(),
    }[kind];
    switch (g.int(10)) {
      case 0:
      case 1:
      case 2:
      case 3:
        return real;
      case 4:
        return `${kind}_${"z".repeat(16)}`;
      case 5:
        return g.id();
      case 6:
        return pct(g.string()).slice(0, 1500) || "x";
      case 7:
        return g.pick([
          "%00",
          "..",
          "%2e%2e",
          "%2F",
          "a%20b",
          "%C3%A9",
          "%FF",
          "null",
          "0",
          "-1",
          "1e9",
          "%25",
          "~",
          "*",
        ]);
      case 8:
        return g.pick(["%zz", "%", "%E0%A4%A", `${kind}_${"a".repeat(2100)}`]);
      default:
        return real.toUpperCase();
    }
  }

  /** A port: in the agent's block, at its edges, outside it, or not a port. */
  function portParam(): string {
    const first = 20000;
    return String(
      g.pick([
        first,
        first + 1,
        first + 99,
        first + 100,
        1,
        0,
        80,
        65535,
        65536,
        -1,
        "abc",
        "1e3",
        "%00",
        "0x50",
      ]),
    );
  }

  /** A home path: plain, nested, escaping, with NUL, long, or random. */
  function pathParam(): string {
    return g.pick([
      "a.txt",
      "dir/b.txt",
      ".profile",
      "..%2F..%2Fetc%2Fpasswd",
      "../../etc/passwd",
      "%2Fetc%2Fshadow",
      "a%00b",
      ".",
      "a/./b",
      "a//b",
      "",
      "x".repeat(300),
      `${"d/".repeat(200)}f`,
      pct(g.string()).slice(0, 500),
    ]);
  }

  function fillPath(url: string): string {
    let out = url
      .replace(/:(org|mch|agt|gld|usr|run|any)/g, (_m, k: Kind) => pathId(k))
      .replace(":port", () => portParam())
      .replace(":path", () => pathParam());
    if (g.chance(0.1)) {
      out += g.pick([
        `?org_id=${pathId("org")}`,
        `?machine_id=${pathId("mch")}`,
        "?org_id=",
        "?org_id[]=a&org_id[]=b",
        "?__proto__[x]=1",
        `?${g.string().slice(0, 50)}`,
        "?org_id=%zz",
        "/",
        "//",
      ]);
    }
    return out;
  }

  /** A body: a mutated valid body, a random JSON value, or random bytes, with some content type. */
  function body(rc: RouteCase): { payload?: string | Buffer; contentType?: string } {
    const choice = g.int(10);
    if (choice <= 3 && rc.valid) {
      const b = rc.valid(f);
      const keys = Object.keys(b);
      const n = g.int(3);
      for (let i = 0; i < n; i++) {
        const op = g.int(4);
        if (op === 0 && keys.length) delete b[g.pick(keys)];
        else if (op === 1)
          Object.defineProperty(b, g.key(), {
            value: g.value(2),
            enumerable: true,
            configurable: true,
            writable: true,
          });
        else if (keys.length) b[g.pick(keys)] = g.value(3);
      }
      if (rc.url.endsWith("/exec")) {
        // real commands run in a real box: keep a valid timeout short
        const tm = b.timeout_ms;
        if (
          tm === undefined ||
          (typeof tm === "number" && Number.isInteger(tm) && tm > 5000 && tm <= 86_400_000)
        )
          b.timeout_ms = 5000;
      }
      if (rc.url.endsWith("/runs")) {
        const ts = b.timeout_s;
        if (
          ts === undefined ||
          (typeof ts === "number" && Number.isInteger(ts) && ts > 5 && ts <= 7 * 24 * 3600)
        )
          b.timeout_s = 5;
      }
      return { payload: jsonText(b), contentType: g.chance(0.9) ? "application/json" : g.pick(contentTypes) };
    }
    if (choice <= 6) {
      const v = g.chance(0.7) ? g.object(3) : g.value(4);
      return { payload: jsonText(v), contentType: g.chance(0.8) ? "application/json" : g.pick(contentTypes) };
    }
    if (choice <= 8) {
      const n = g.pick([0, 1, 7, 100, 4096, 70_000]);
      const bytes = Buffer.alloc(n);
      for (let i = 0; i < n; i++) bytes[i] = g.int(256);
      if (g.chance(0.3) && n > 1) bytes[0] = 0x7b; // looks like it starts an object
      return { payload: bytes, contentType: g.pick(contentTypes) };
    }
    if (g.chance(0.5)) return {};
    // bigger than the body limit, or a JSON text with hand-made oddities
    return g.chance(0.3)
      ? { payload: Buffer.alloc(1024 * 1024 + 10, 0x20), contentType: "application/json" }
      : {
          payload: g.pick([
            '{"name": "a", "name": "b"}',
            '{"__proto__": {"polluted": true}, "name": "x"}',
            '{"constructor": {"prototype": {"polluted": true}}}',
            '{"max_workspace_mib": 1e999}',
            '{"max_workspace_mib": -1e999}',
            '{"name": "\\ud800"}',
            '{"name": "\\u0000"}',
            "\ufeff{}",
            "[]",
            "null",
            "0",
            '""',
            "{".repeat(5000),
            `${"[".repeat(100_000)}${"]".repeat(100_000)}`,
          ]),
          contentType: "application/json",
        };
  }

  before(async () => {
    t = await startTestServer();
    await ensureFixtures();
    // every route the OpenAPI document lists is fuzzed too, the ones added after this file included
    const doc = (await t.call("GET", "/api/openapi.json")).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    const known = new Set(routes.map((r) => `${r.method} ${r.url}`));
    const kindOf: Record<string, Kind> = {
      orgs: "org",
      machines: "mch",
      agents: "agt",
      guilds: "gld",
      runs: "run",
    };
    for (const [docPath, ops] of Object.entries(doc.paths)) {
      const resource = docPath.split("/")[2] ?? "";
      const url = docPath
        .replace("{id}", `:${kindOf[resource] ?? "any"}`)
        .replace("{agent_id}", ":agt")
        .replace("{user_id}", ":usr")
        .replace("{port}", ":port")
        .replace("{path}", ":path")
        .replace(/\{[^}]+\}/g, ":any");
      for (const method of Object.keys(ops).map((m) => m.toUpperCase())) {
        if (!known.has(`${method} ${url}`)) {
          routes.push({ method, url });
          known.add(`${method} ${url}`);
        }
      }
    }
  });
  after(async () => {
    await t?.close();
    const statuses = [...tally.byStatus.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}:${n}`);
    console.log(`fuzz seed ${seed}: ${tally.requests} requests; statuses ${statuses.join(" ")}`);
    if (allowedErrors.length) console.log(`allowed 5xx answers of box routes:\n${summary(allowedErrors)}`);
  });

  /** Bad answers of the one fuzz run, by kind; both tests below read them. */
  const serverErrors: string[] = [];
  /** The allowed 5xx answers (box routes), reported in the log. */
  const allowedErrors: string[] = [];
  const notEnvelope: string[] = [];

  /** One example per kind of bad answer (status and code), with how often it came. */
  function summary(list: string[]): string {
    const kinds = new Map<string, { n: number; example: string }>();
    for (const line of list) {
      const kind =
        /-> (\d+).*?"code":"([^"]+)"/.exec(line)?.slice(1).join(" ") ?? /-> (\d+)/.exec(line)?.[1] ?? "?";
      const k = kinds.get(kind) ?? { n: 0, example: line };
      k.n++;
      kinds.set(kind, k);
    }
    return [...kinds.entries()]
      .map(([kind, { n, example }]) => `  ${kind} x${n}, e.g. ${example}`)
      .join("\n");
  }

  /** The valid request of a route on the real fixtures, as the fuzz corpus starts. */
  function seedRequest(
    rc: RouteCase,
    ndjson: boolean,
  ): { method: string; url: string; b: { payload?: string; contentType?: string }; accept?: string } {
    const ids: Record<string, string> = {
      org: f.org,
      mch: f.machine,
      agt: f.agent,
      gld: f.guild,
      usr: f.user,
    };
    const url = rc.url.replace(/:(org|mch|agt|gld|usr)/g, (_m, k: string) => ids[k] as string);
    const b = rc.valid ? { payload: jsonText(rc.valid(f)), contentType: "application/json" } : {};
    return { method: rc.method, url, b, ...(ndjson ? { accept: "application/x-ndjson" } : {}) };
  }

  test("random requests to every route: no 5xx", async (tt) => {
    tt.diagnostic(`seed ${seed}`);
    const methods = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
    // first every route once with its valid request (twice for exec: buffered and NDJSON), then random ones
    const corpus = [
      ...routes.map((rc) => [rc, false] as const),
      [routes.find((rc) => rc.url.endsWith("/exec")) as RouteCase, true] as const,
    ];
    for (let i = 0; i < ROUNDS + corpus.length; i++) {
      let method: string;
      let url: string;
      let b: { payload?: string | Buffer; contentType?: string };
      const headers: Record<string, string> = {};
      if (i < corpus.length) {
        const [rc, ndjson] = corpus[i] as readonly [RouteCase, boolean];
        const s = seedRequest(rc, ndjson);
        ({ method, url, b } = s);
        if (s.accept) headers.accept = s.accept;
      } else {
        const rc = routes[i % routes.length] as RouteCase;
        method = g.chance(0.85) ? rc.method : g.pick(methods);
        url = fillPath(rc.url);
        b = method === "GET" && g.chance(0.8) ? {} : body(rc);
        if (g.chance(0.05)) headers.accept = "application/x-ndjson";
      }
      if (b.contentType !== undefined) headers["content-type"] = b.contentType;
      const opts: InjectOptions = {
        method,
        url,
        headers,
        ...(b.payload !== undefined ? { payload: b.payload } : {}),
      };
      const r = await t.inject(opts);
      tally.requests++;
      tally.byStatus.set(r.statusCode, (tally.byStatus.get(r.statusCode) ?? 0) + 1);
      const what = `#${i} ${method} ${url.slice(0, 100)} [${b.contentType ?? "-"}${headers.accept ? `, accept ${headers.accept}` : ""}] ${show(typeof b.payload === "string" ? b.payload : b.payload ? `<${b.payload.length} bytes>` : "").slice(0, 160)}`;
      let parsed: unknown;
      try {
        parsed = r.body.length ? JSON.parse(r.body) : undefined;
      } catch {
        parsed = r.body;
      }
      if (r.statusCode >= 500) {
        const line = `${what} -> ${r.statusCode} ${show(parsed).slice(0, 300)}`;
        if (allowed5xx(url, r.statusCode, parsed)) allowedErrors.push(line);
        else serverErrors.push(line);
      }
      if (r.statusCode >= 400) {
        try {
          assertEnvelope(parsed, "");
        } catch {
          notEnvelope.push(`${what} -> ${r.statusCode} ${show(parsed).slice(0, 300)}`);
        }
      }
      if (r.statusCode < 300 && (method === "DELETE" || method === "PATCH" || url.includes("/members")))
        await ensureFixtures();
    }
    // the server still answers, and nothing was polluted
    assert.equal((await t.inject({ method: "GET", url: "/health" })).statusCode, 200);
    assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype was polluted");
    assert.ok(tally.requests >= 600, `only ${tally.requests} requests`);
    assert.equal(
      serverErrors.length,
      0,
      `${serverErrors.length} 5xx answers (seed ${seed}):\n${summary(serverErrors)}`,
    );
  });

  test("the same run: every error answer is the envelope with a string code", () => {
    assert.ok(tally.requests >= 600, "the fuzz run did not happen");
    assert.equal(
      notEnvelope.length,
      0,
      `${notEnvelope.length} error answers outside the envelope (seed ${seed}):\n${summary(notEnvelope)}`,
    );
  });
});
