// GitHub App installation tokens in real boxes: a scripted GitHub on loopback (the App's
// POST /app/installations/:id/access_tokens, checking the JWT's RS256 signature with the App's
// public key, and a smart-HTTP git remote through `git http-backend` that takes only a live
// token as Basic auth). A private repository clones in the box through the credential helper
// of the agent's runtime folder; the token expires and is refreshed (the old one refused, a
// fetch after works); another agent of the isolated machine cannot read the folder; the folder
// is gone when the box stops.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes, verify } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason, testProvider } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { readProbe } from "../support/probe.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { tablesHolding } from "../support/store-scan.js";

const APP_ID = "424242";
const INSTALLATION = "777";
// long enough for a clone in a slow box to finish with the token it started with (a real token lasts an hour)
const TTL_MS = 15_000;

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PEM = privateKey.export({ type: "pkcs8", format: "pem" }).toString();

interface FakeGithub {
  port: number;
  minted: { token: string; expiresAt: number }[];
  jwtRefusals: number;
  /** The status the git remote answers a token with (its info/refs). */
  tryToken(token: string): Promise<number>;
  close(): Promise<void>;
}

function checkJwt(auth: string | undefined): boolean {
  const m = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/.exec(auth ?? "");
  if (!m) return false;
  const ok = verify("sha256", Buffer.from(`${m[1]}.${m[2]}`), publicKey, Buffer.from(m[3]!, "base64url"));
  const head = JSON.parse(Buffer.from(m[1]!, "base64url").toString()) as { alg?: string };
  const body = JSON.parse(Buffer.from(m[2]!, "base64url").toString()) as {
    iat: number;
    exp: number;
    iss: string;
  };
  const now = Math.floor(Date.now() / 1000);
  return (
    ok &&
    head.alg === "RS256" &&
    body.iss === APP_ID &&
    body.iat <= now &&
    body.exp > now &&
    body.exp - body.iat <= 600
  );
}

async function fakeGithub(projectRoot: string): Promise<FakeGithub> {
  const minted: FakeGithub["minted"] = [];
  const state = { jwtRefusals: 0 };
  const live = (token: string) => minted.some((t) => t.token === token && t.expiresAt > Date.now());
  const srv = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "POST" && url.pathname === `/app/installations/${INSTALLATION}/access_tokens`) {
      if (!checkJwt(req.headers.authorization)) {
        state.jwtRefusals++;
        res.writeHead(401, { "content-type": "application/json" });
        return res.end(JSON.stringify({ message: "A JSON web token could not be decoded" }));
      }
      const t = { token: `ghs_${randomBytes(18).toString("hex")}`, expiresAt: Date.now() + TTL_MS };
      minted.push(t);
      res.writeHead(201, { "content-type": "application/json" });
      return res.end(
        JSON.stringify({ token: t.token, expires_at: new Date(t.expiresAt).toISOString(), permissions: {} }),
      );
    }
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
    const [user, pass] = basic ? Buffer.from(basic[1]!, "base64").toString().split(":") : [];
    if (user !== "x-access-token" || !pass || !live(pass)) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="GitHub"' });
      return res.end("bad credentials\n");
    }
    // the smart-HTTP remote: git http-backend as a CGI
    const cgi = spawn("git", ["http-backend"], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: "1",
        REQUEST_METHOD: req.method ?? "GET",
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        REMOTE_USER: user,
        REMOTE_ADDR: "127.0.0.1",
        ...(req.headers["content-encoding"]
          ? { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] }
          : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: req.headers["git-protocol"] as string } : {}),
      },
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on("data", (c: Buffer) => chunks.push(c));
    cgi.on("close", () => {
      const out = Buffer.concat(chunks);
      const cut = out.indexOf("\r\n\r\n");
      const head = out.subarray(0, cut).toString().split("\r\n");
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head) {
        const i = line.indexOf(":");
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === "status") status = Number(v.split(" ")[0]);
        else if (k) headers[k] = v;
      }
      res.writeHead(status, headers);
      res.end(out.subarray(cut + 4));
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as AddressInfo).port;
  return {
    port,
    minted,
    get jwtRefusals() {
      return state.jwtRefusals;
    },
    async tryToken(token) {
      const r = await fetch(`http://127.0.0.1:${port}/org/private.git/info/refs?service=git-upload-pack`, {
        headers: { authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}` },
      });
      await r.arrayBuffer();
      return r.status;
    },
    close: () => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))),
  };
}

/** Waits until `fn` holds (polled), failing with `what` after `ms`. */
async function until(what: string, fn: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("GitHub App installation tokens in the runtime folder", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let gh: FakeGithub;
  let root: string;
  let org: string;
  let machine: string;
  let a: string;
  let b: string;

  before(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), "warren-gh-"));
    const bare = path.join(root, "org", "private.git");
    const work = path.join(root, "work");
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, stdio: "pipe" });
    execFileSync("git", ["init", "-q", "--bare", "-b", "main", bare]);
    execFileSync("git", ["init", "-q", "-b", "main", work]);
    execFileSync("sh", ["-c", `echo 'hello private' > ${work}/README`]);
    git(work, "add", "README");
    git(work, "commit", "-qm", "first");
    git(work, "push", "-q", bare, "main");
    gh = await fakeGithub(root);
    t = await startTestServer({
      env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(gh.port) },
      egressHosts: { "git.test": ["127.0.0.1"] },
    });
    org = (await t.call("POST", "/api/orgs", { name: "gh" })).body.id;
    const m = await t.call("POST", "/api/machines", {
      org_id: org,
      name: "m",
      trust: "isolated",
      memory_mib: 512,
    });
    assert.equal(m.status, 201, JSON.stringify(m.body));
    machine = m.body.id;
    const mk = async (name: string) => {
      const r = await t.call("POST", "/api/agents", { org_id: org, machine_id: machine, name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const set = await t.call("PATCH", `/api/agents/${r.body.id}`, {
        sandbox_policy: { network: { allow: [`git.test:${gh.port}`] } },
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      return r.body.id as string;
    };
    a = await mk("a");
    b = await mk("b");
  });

  after(async () => {
    if (machine) await t?.call("POST", `/api/machines/${machine}/stop`);
    await t?.close();
    await gh?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const exec = async (agent: string, command: string) => {
    const r = await t.call("POST", `/api/agents/${agent}/exec`, {
      command,
      timeout_ms: 60_000,
      env: { GIT_TERMINAL_PROMPT: "0" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { stdout: string; stderr: string; exit_code: number };
  };
  const hostDir = () =>
    path.join(t.stateRoot, "run", testProvider === "oci" ? "oci-boxes" : "boxes", machine, "warren", a);

  test("an owner registers an App (its key never answered) and binds an agent to an installation", async () => {
    const bad = await t.call("POST", "/api/github/apps", {
      org_id: org,
      name: "bad",
      app_id: APP_ID,
      private_key: "not a key",
    });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    const app = await t.call("POST", "/api/github/apps", {
      org_id: org,
      name: "ci",
      app_id: APP_ID,
      private_key: PEM,
      api_url: `http://127.0.0.1:${gh.port}`,
      git_url: `http://git.test:${gh.port}`,
    });
    assert.equal(app.status, 201, JSON.stringify(app.body));
    assert.ok(!JSON.stringify(app.body).includes("PRIVATE KEY"));
    const bound = await t.call("PUT", `/api/agents/${a}/github`, {
      github_app_id: app.body.id,
      installation_id: INSTALLATION,
    });
    assert.equal(bound.status, 200, JSON.stringify(bound.body));
    // no box yet: no token minted
    assert.equal(bound.body.token_expires_at, null);
    assert.equal(gh.minted.length, 0);
  });

  test("the box starts with a token: a private repository clones with the credential helper", async () => {
    const first = await exec(a, "id -u");
    assert.equal(first.exit_code, 0, first.stderr);
    await until("a token in the runtime folder", async () => {
      const r = await t.call("GET", `/api/agents/${a}/github`);
      return r.body.token_expires_at !== null;
    });
    assert.equal(gh.jwtRefusals, 0);
    const env = await exec(a, "env");
    assert.doesNotMatch(env.stdout, /ghs_/, "no token in the agent's environment");
    const clone = await exec(
      a,
      `git clone -q http://git.test:${gh.port}/org/private.git private && cat private/README`,
    );
    assert.equal(clone.exit_code, 0, clone.stdout + clone.stderr);
    assert.equal(clone.stdout.trim(), "hello private");
    // the token is in the runtime folder alone: not in the clone's configuration, the home or /tmp;
    // the App's private key is nowhere in the box; no stored row holds the token or the key in the clear
    const token = gh.minted.at(-1)!.token;
    const spread = await exec(
      a,
      `grep -rlsF -e '${token}' -e 'PRIVATE KEY' "$HOME" /tmp /run/warren/${a}; echo "rc=$?"`,
    );
    assert.equal(
      spread.stdout.trim(),
      `/run/warren/${a}/github-token.json\nrc=0`,
      spread.stdout + spread.stderr,
    );
    assert.deepEqual(await tablesHolding(t, token), [], "a table holds the token");
    assert.deepEqual(await tablesHolding(t, "PRIVATE KEY"), [], "a table holds the private key");
    const mode = await exec(a, `stat -c '%a %u' /run/warren/${a} /run/warren/${a}/github-token.json`);
    assert.equal(mode.exit_code, 0, mode.stderr);
    const [dirLine, fileLine] = mode.stdout.trim().split("\n");
    assert.match(dirLine!, /^700 \d+$/);
    assert.match(fileLine!, /^600 \d+$/);
  });

  test("the token expires and is refreshed: the old one is refused, a fetch after works", async () => {
    const old = gh.minted.at(-1)!;
    await until("a refreshed token", () => gh.minted.at(-1)!.token !== old.token);
    await until("the first token's expiry", () => Date.now() > old.expiresAt + 100);
    assert.equal(await gh.tryToken(old.token), 401);
    // the folder holds the newest token the scripted GitHub minted (read on the host)
    const inFolder = JSON.parse(readFileSync(path.join(hostDir(), "github-token.json"), "utf8"));
    assert.equal(inFolder.token, gh.minted.at(-1)!.token);
    assert.notEqual(inFolder.token, old.token);
    const fetched = await exec(a, "git -C private fetch -q origin && git -C private log --oneline | wc -l");
    assert.equal(fetched.exit_code, 0, fetched.stdout + fetched.stderr);
    assert.equal(fetched.stdout.trim(), "1");
  });

  test("another agent of the isolated machine cannot read the runtime folder (EACCES)", async () => {
    const r = await exec(b, readProbe([`/run/warren/${a}/`, `/run/warren/${a}/github-token.json`]));
    assert.equal(r.stdout.trim(), "EACCES\nEACCES", r.stdout + r.stderr);
    const own = await exec(b, `ls -ld /run/warren/${b}`);
    assert.equal(own.exit_code, 0, own.stderr);
  });

  test("a deleted agent's runtime folder goes while the box runs", async () => {
    const dirOf = (agent: string) => path.join(path.dirname(hostDir()), agent);
    assert.ok(existsSync(dirOf(b)), dirOf(b));
    const del = await t.call("DELETE", `/api/agents/${b}`);
    assert.ok(del.status < 300, JSON.stringify(del.body));
    assert.equal(existsSync(dirOf(b)), false);
    assert.ok(existsSync(hostDir()));
  });

  test("the runtime folder is gone when the box stops", async () => {
    assert.ok(existsSync(hostDir()), hostDir());
    const stop = await t.call("POST", `/api/machines/${machine}/stop`);
    assert.ok(stop.status < 300, JSON.stringify(stop.body));
    assert.equal(existsSync(hostDir()), false);
    const minted = gh.minted.length;
    const r = await t.call("GET", `/api/agents/${a}/github`);
    assert.equal(r.body.token_expires_at, null);
    assert.equal(gh.minted.length, minted);
  });
});
