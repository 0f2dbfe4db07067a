// Sign-in by OIDC (AUTH_MODE=oidc) with a real OpenID provider library on loopback: a person
// signs in in Chromium through the provider's login and consent pages, gets a session cookie
// (HttpOnly, SameSite=Lax), is who the verified email says, signs out; a personal token made
// in that session works with the CLI (`warren login`) and stops working once revoked; an
// unverified email is refused. A session's cookie older than WARREN_SESSION_ROTATE_S gets a new
// value and the old one stops working. The app itself shows Sign in to a browser without a
// session, who is signed in, and Sign out.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { runCli } from "../../src/cli/run.js";
import { signInAtProvider, startOidcProvider, type TestProvider } from "../support/oidc.js";
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

  test("the app: without a session it shows Sign in; through the provider and back it shows who, and Sign out ends it", async () => {
    await page.evaluate(async () => fetch("/auth/logout", { method: "POST" }));
    await ctx.clearCookies();
    await page.goto(`${t.url}/connections`);
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    assert.equal(await page.getByTestId("signed-in-as").count(), 0);
    await page.getByRole("link", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.origin === op.issuer);
    await page.fill('input[name="login"]', "alice");
    await page.fill('input[name="password"]', "any");
    await page.click('button[type="submit"]');
    await page.waitForURL((u) => u.pathname.startsWith("/interaction/") || u.origin === t.url);
    if (new URL(page.url()).pathname.startsWith("/interaction/")) await page.click('button[type="submit"]');
    // back on the page it was on, signed in
    await page.waitForURL(`${t.url}/connections`);
    await page.getByRole("heading", { name: "Connections", level: 1 }).waitFor();
    assert.equal(await page.getByTestId("signed-in-as").innerText(), "alice@example.com");
    assert.equal(await page.getByRole("heading", { name: "Sign in", level: 1 }).count(), 0);
    assert.equal((await me()).status, 200);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${t.url}/`);
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    assert.equal((await me()).status, 401);
    assert.equal(await page.getByTestId("signed-in-as").count(), 0);
  });
});

describe("sign-in sessions rotate", () => {
  let t: TestServer;
  let op: TestProvider;

  before(async () => {
    op = await startOidcProvider({ users: { bob: { email: "bob@example.com" } } });
    t = await startTestServer({
      listen: true,
      env: {
        AUTH_MODE: "oidc",
        WARREN_OIDC_ISSUER: op.issuer,
        WARREN_OIDC_CLIENT_ID: "warren-rot",
        WARREN_OIDC_CLIENT_SECRET: "rot-client-secret-8d2a",
        WARREN_SESSION_ROTATE_S: "1",
      },
    });
    op.serve([
      {
        client_id: "warren-rot",
        client_secret: "rot-client-secret-8d2a",
        redirect_uris: [`${t.url}/auth/callback`],
      },
    ]);
  });
  after(async () => {
    await t?.close();
    await op?.close();
  });

  const valueIn = (res: Response, name: string): string | undefined => {
    for (const c of res.headers.getSetCookie()) {
      const [pair = ""] = c.split(";");
      if (pair.startsWith(`${name}=`)) return pair.slice(name.length + 1);
    }
    return undefined;
  };
  const me = (session: string) =>
    fetch(`${t.url}/api/auth/me`, { headers: { cookie: `warren_session=${session}` } });

  test("a cookie older than the rotation age gets a new value; the old one stops working", async () => {
    // signed in by HTTP as a browser would: warren's login, the provider's pages, warren's callback
    const login = await fetch(`${t.url}/auth/login?return_to=/api/auth/me`, { redirect: "manual" });
    assert.equal(login.status, 302);
    const pending = login.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const back = await signInAtProvider(login.headers.get("location")!, "bob");
    const cb = await fetch(back, { redirect: "manual", headers: { cookie: pending } });
    assert.equal(cb.status, 303, await cb.text());
    const first = valueIn(cb, "warren_session");
    assert.ok(first, "a session cookie");
    const young = await me(first);
    assert.equal(young.status, 200);
    assert.equal(valueIn(young, "warren_session"), undefined, "a young session keeps its value");

    // past the rotation age (1 s), /api/auth/me answers with a new value
    let rotated: string | undefined;
    const end = Date.now() + 15_000;
    while (!rotated) {
      assert.ok(Date.now() < end, "the session was never rotated");
      const r = await me(first);
      assert.equal(r.status, 200);
      rotated = valueIn(r, "warren_session");
      if (rotated) {
        const raw = r.headers.getSetCookie().find((c) => c.startsWith("warren_session="))!;
        assert.match(raw, /; HttpOnly/);
        assert.match(raw, /; SameSite=Lax/);
      } else await new Promise((res) => setTimeout(res, 100));
    }
    assert.notEqual(rotated, first);
    assert.equal((await me(first)).status, 401, "the old value stops working");
    const now = await me(rotated);
    assert.equal(now.status, 200);
    assert.deepEqual(await now.json(), { email: "bob@example.com", auth_mode: "oidc" });
  });
});
