// Who the API believes (issue: "No door back into the server"): the identity header only from
// WARREN_TRUSTED_PROXIES, and nobody over a connection the server opened itself (its egress
// proxy's or a server-side fetch's upstream side), in every mode. Real HTTP over loopback.
import assert from "node:assert/strict";
import net from "node:net";
import { eq } from "drizzle-orm";
import { after, describe, test } from "node:test";
import { schema } from "../../src/store/index.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";

/** One request over a socket of the caller's, answered as status and parsed body. */
function over(
  socket: net.Socket,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    let buf = "";
    socket.setEncoding("utf8");
    socket.on("data", (c: string) => {
      buf += c;
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const len = Number(/\r\ncontent-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? "0");
      if (buf.length - end - 4 < len) return;
      resolve({ status: Number(buf.slice(9, 12)), body: JSON.parse(buf.slice(end + 4, end + 4 + len)) });
    });
    socket.on("error", reject);
    const lines = [`${method} ${path} HTTP/1.1`, "host: 127.0.0.1", "connection: close"];
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    if (body !== undefined)
      lines.push("content-type: application/json", `content-length: ${Buffer.byteLength(body)}`);
    socket.write(`${lines.join("\r\n")}\r\n\r\n${body ?? ""}`);
  });
}

const connected = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });

describe("the identity header is believed only from trusted peers", () => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const s of servers) await s.close();
  });

  test("from a peer outside WARREN_TRUSTED_PROXIES the header names nobody: 401, and no user is made", async () => {
    const t = await startTestServer({
      listen: true,
      env: { AUTH_MODE: "trusted-header", WARREN_TRUSTED_PROXIES: "10.0.0.0/8,::ffff:10.0.0.0/104" },
    });
    servers.push(t);
    for (const [method, path, body] of [
      ["GET", "/api/orgs", undefined],
      ["POST", "/api/orgs", JSON.stringify({ name: "x" })],
      ["GET", "/metrics", undefined],
    ] as const) {
      const r = await fetch(`${t.url}${path}`, {
        method,
        headers: { "x-forwarded-email": OWNER, ...(body ? { "content-type": "application/json" } : {}) },
        ...(body ? { body } : {}),
      });
      assert.equal(r.status, 401, `${method} ${path}`);
      const e = (await r.json()) as { error: { code: string; message: string } };
      assert.equal(e.error.code, "auth.required");
      assert.match(e.error.message, /WARREN_TRUSTED_PROXIES/);
    }
    const users = await t.server.store.db.select().from(schema.users).where(eq(schema.users.email, OWNER));
    assert.deepEqual(users, []);
    assert.deepEqual(await t.server.store.db.select().from(schema.orgs), []);
  });

  test("from a trusted peer (the default: loopback) the header is the identity", async () => {
    const t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
    servers.push(t);
    const made = await fetch(`${t.url}/api/orgs`, {
      method: "POST",
      headers: { "x-forwarded-email": OWNER, "content-type": "application/json" },
      body: JSON.stringify({ name: "trusted" }),
    });
    assert.equal(made.status, 201);
    const mine = (await (
      await fetch(`${t.url}/api/orgs`, { headers: { "x-forwarded-email": OWNER } })
    ).json()) as {
      items: { name: string }[];
    };
    assert.deepEqual(
      mine.items.map((o) => o.name),
      ["trusted"],
    );
    const none = await fetch(`${t.url}/api/orgs`);
    assert.equal(none.status, 401);
  });

  for (const mode of ["compat-cookie", "trusted-header"]) {
    test(`over a connection the server opened itself nobody is believed (${mode})`, async () => {
      const t = await startTestServer({ listen: true, env: { AUTH_MODE: mode } });
      servers.push(t);
      const port = Number(new URL(t.url!).port);
      const headers: Record<string, string> = mode === "trusted-header" ? { "x-forwarded-email": OWNER } : {};
      const org = (await t.call("POST", "/api/orgs", { name: "own" }, headers)).body as { id: string };
      // the same request over a plain socket is believed...
      const plain = await connected(port);
      assert.equal((await over(plain, "GET", "/api/orgs", headers)).status, 200);
      plain.destroy();
      // ...and over one the server tracks as its own, refused, whatever it asks
      for (const [method, path, body] of [
        ["GET", "/api/orgs", undefined],
        [
          "PUT",
          `/api/orgs/${org.id}/members`,
          JSON.stringify({ email: "intruder@example.com", role: "owner" }),
        ],
        ["GET", "/metrics", undefined],
        ["GET", "/health", undefined],
      ] as const) {
        const s = await connected(port);
        t.server.own.track(s);
        try {
          const r = await over(s, method, path, headers, body);
          assert.equal(r.status, 401, `${method} ${path}`);
          assert.equal(r.body.error.code, "auth.required");
        } finally {
          s.destroy();
        }
      }
      const members = (await t.call("GET", `/api/orgs/${org.id}/members`, undefined, headers)).body as {
        items: { email: string }[];
      };
      assert.ok(!members.items.some((m) => m.email === "intruder@example.com"));
    });
  }
});
