// Sign-in by OIDC (AUTH_MODE=oidc) with a real OpenID provider library on loopback: a person
// signs in in Chromium through the provider's login and consent pages, gets a session cookie
// (HttpOnly, SameSite=Lax), is who the verified email says, signs out; a personal token made
// in that session works with the CLI (`warren login`) and stops working once revoked; an
// unverified email is refused.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { runCli } from "../../src/cli/run.js";
import { startOidcProvider, type TestProvider } from "../support/oidc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const CHROMIUM = "/usr/bin/chromium";

async function warren(argv: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  const out: Buffer[] = [];
  const sink = new Writable({
    write(c: Buffer, _e, done) {
      out.push(c);
      done();
    },
  });
  const code = await runCli(argv, { stdout: sink, stderr: sink, stdin: Readable.from([]), env });
  return { code, out: Buffer.concat(out).toString("utf8") };
}

describe("sign-in by OIDC", { skip: existsSync(CHROMIUM) ? false : "chromium is not installed" }, () => {
  let t: TestServer;
  let op: TestProvider;
  let ctx: BrowserContext;
  let page: Page;
  let dir: string;

  before(async () => {
    op = await startOidcProvider({
      users: {
        alice: { email: "Alice@Example.com" },
        mallory: { email: "mallory@example.com", verified: false },
      },
    });
    dir = await mkdtemp(path.join(os.tmpdir(), "warren-signin-"));
    t = await startTestServer({
      listen: true,
      env: {
        AUTH_MODE: "oidc",
        WARREN_OIDC_ISSUER: op.issuer,
        WARREN_OIDC_CLIENT_ID: "warren-app",
        WARREN_OIDC_CLIENT_SECRET: "app-client-secret-31f9",
      },
    });
    op.serve([
      {
        client_id: "warren-app",
        client_secret: "app-client-secret-31f9",
        redirect_uris: [`${t.url}/auth/callback`],
      },
    ]);
    ctx = await chromium.launchPersistentContext(path.join(dir, "profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu"],
    });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(30_000);
  });

  after(async () => {
    await ctx?.close();
    await t?.close();
    await op?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const me = () =>
    page.evaluate(async () => {
      const r = await fetch("/api/auth/me");
      return { status: r.status, body: (await r.json()) as { email?: string; error?: { code: string } } };
    });

  /** Signs in at the provider's pages as `login`, from warren's /auth/login. */
  async function signIn(login: string): Promise<void> {
    await page.goto(`${t.url}/auth/login?return_to=/api/auth/me`);
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', "any");
    await page.click('button[type="submit"]');
    // the consent page, the first time
    await page.waitForURL((u) => u.pathname.startsWith("/interaction/") || u.origin === t.url);
    if (new URL(page.url()).pathname.startsWith("/interaction/")) await page.click('button[type="submit"]');
  }

  test("before sign-in the API refuses; a person signs in and out in Chromium", async () => {
    await page.goto(`${t.url}/api/auth/me`);
    assert.equal((await me()).status, 401);
    await signIn("alice");
    await page.waitForURL(`${t.url}/api/auth/me`);
    const who = await me();
    assert.equal(who.status, 200);
    assert.deepEqual(who.body, { email: "alice@example.com", auth_mode: "oidc" });
    const cookie = (await ctx.cookies(t.url)).find((c) => c.name === "warren_session");
    assert.ok(cookie, "a session cookie");
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, "Lax");
    // the page's script cannot read it
    assert.ok(
      !(await page.evaluate(() => String((globalThis as any).document.cookie))).includes("warren_session"),
    );

    const out = await page.evaluate(async () => (await fetch("/auth/logout", { method: "POST" })).status);
    assert.equal(out, 204);
    assert.equal((await me()).status, 401);
    // the old cookie's value no longer works, even sent again by hand
    const again = await fetch(`${t.url}/api/auth/me`, {
      headers: { cookie: `warren_session=${cookie.value}` },
    });
    assert.equal(again.status, 401);
  });

  test("a personal token works with the CLI (warren login) and stops once revoked", async () => {
    // the provider's own session is forgotten too: its login page shows again
    await ctx.clearCookies();
    await signIn("alice");
    await page.waitForURL(`${t.url}/api/auth/me`);
    const made = await page.evaluate(async () => {
      const r = await fetch("/api/auth/tokens", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "laptop" }),
      });
      return (await r.json()) as { id: string; token: string };
    });
    assert.match(made.token, /^wpt_/);
    const env = { WARREN_URL: t.url!, WARREN_CREDENTIALS: path.join(dir, "cred", "credentials.json") };
    const refused = await warren(["orgs", "list"], env);
    assert.notEqual(refused.code, 0, "no token stored yet");
    const login = await warren(["login", "--token", made.token], env);
    assert.equal(login.code, 0, login.out);
    assert.match(login.out, /signed in to .* as alice@example\.com/);
    assert.equal((await stat(env.WARREN_CREDENTIALS)).mode & 0o777, 0o600);
    const listed = await warren(["orgs", "list", "--json"], env);
    assert.equal(listed.code, 0, listed.out);

    const gone = await page.evaluate(
      async (id) => (await fetch(`/api/auth/tokens/${id}`, { method: "DELETE" })).status,
      made.id,
    );
    assert.equal(gone, 204);
    const after = await warren(["orgs", "list"], env);
    assert.notEqual(after.code, 0);
    assert.match(after.out, /revoked/);
    const bad = await warren(["login", "--token", made.token], env);
    assert.notEqual(bad.code, 0);
  });

  test("an unverified email signs nobody in", async () => {
    await page.evaluate(async () => fetch("/auth/logout", { method: "POST" }));
    await ctx.clearCookies();
    await signIn("mallory");
    await page.waitForURL((u) => u.origin === t.url && u.pathname === "/auth/callback");
    const text = await page.textContent("body");
    assert.match(text ?? "", /signin\.failed.*not verified mallory@example\.com/);
    assert.equal((await me()).status, 401);
  });
});
