// A preview session holds its member's access as it was when its link was issued: removed
// and added again, given areas, or given another role, the member's old session is refused
// (401 auth.required, saying their access changed) and a WebSocket open through it is closed
// at once; a link asked for afterwards works. A box serves the port (a page and a WebSocket
// that stays open until either side closes it).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import { boxSkipReason } from "../box/fixture.js";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { HOLDING_BOX_SERVER, previewGet } from "../support/preview.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";
const VIEWER = "viewer@example.com";

for (const leg of dbLegs)
  describe(
    `preview sessions and their member's access, on ${leg.name}`,
    { skip: boxSkipReason() ?? leg.skip ?? false },
    () => {
      let t: TestServer;
      let org: string;
      let agent: { id: string; ports: { first: number } };
      let server: Promise<unknown> | undefined;
      const sockets: WebSocket[] = [];
      const as = asMember(() => t);
      const owner = as(OWNER);
      const P = () => agent.ports.first + 3;

      /** A preview session of `email` for port P: the cookie the preview set, and its origin. */
      const sessionOf = async (email: string, path = "/") => {
        const moved = await t.inject({
          method: "GET",
          url: `/api/agents/${agent.id}/ports/${P()}${path}`,
          headers: { "x-forwarded-email": email },
        });
        assert.equal(moved.statusCode, 307, moved.body);
        const to = new URL(String(moved.headers.location));
        const first = await previewGet(t.previewPort!, to);
        assert.equal(first.status, 303, first.body);
        return {
          cookie: String(first.headers["set-cookie"]).split(";")[0]!,
          origin: to.origin,
          host: to.host,
        };
      };
      const page = (s: { cookie: string; origin: string }) =>
        previewGet(t.previewPort!, new URL("/", s.origin), { cookie: s.cookie });

      /** A WebSocket through the preview with the session's cookie, once the box said "open". */
      const socketOf = (s: { cookie: string; host: string }) =>
        new Promise<{ ws: WebSocket; closed: Promise<void> }>((resolve, reject) => {
          const ws = new WebSocket(`ws://127.0.0.1:${t.previewPort}/live`, {
            headers: { host: s.host, cookie: s.cookie },
          });
          sockets.push(ws);
          const closed = new Promise<void>((r) => ws.once("close", () => r()));
          ws.once("message", (data: Buffer) =>
            data.toString() === "open" ? resolve({ ws, closed }) : reject(new Error(String(data))),
          );
          ws.once("unexpected-response", (_q, res) =>
            reject(new Error(`upgrade refused: ${res.statusCode}`)),
          );
          ws.once("error", reject);
        });

      const refusedAsChanged = async (s: { cookie: string; origin: string }) => {
        const r = await page(s);
        assert.equal(r.status, 401, r.body);
        const e = JSON.parse(r.body).error;
        assert.equal(e.code, "auth.required");
        assert.match(e.message, /your access to this organisation changed since this preview was opened/);
        // the session is gone for good, not only while the access differs
        assert.equal((await page(s)).status, 401);
      };

      const memberId = async (email: string) =>
        (await owner("GET", `/api/orgs/${org}/members`)).body.items.find(
          (m: { email: string }) => m.email === email,
        ).user_id as string;

      before(async () => {
        t = await startTestServer({ leg, listen: true, env: { AUTH_MODE: "trusted-header" } });
        let made;
        ({ org, agentBody: made } = await orgWithAgent(owner, {
          org: "previewed",
          areas: { proj: ["proj"] },
          members: [{ email: VIEWER, role: "viewer" }],
        }));
        agent = made;
        server = owner("POST", `/api/agents/${agent.id}/exec`, {
          argv: ["python3", "-c", HOLDING_BOX_SERVER, String(P())],
          timeout_ms: 600_000,
        });
        // up once the owner's preview answers the box's page (502 while nothing listens)
        const s = await sessionOf(OWNER);
        for (let i = 0; ; i++) {
          const r = await page(s);
          if (r.status === 200 && r.body === "hello") break;
          assert.ok(i < 600, `the box's server did not come up: ${r.status} ${r.body}`);
          await new Promise((res) => setTimeout(res, 100));
        }
      });

      after(async () => {
        for (const ws of sockets) ws.terminate();
        if (server && agent) {
          const s = await sessionOf(OWNER, "/quit").catch(() => undefined);
          if (s)
            await previewGet(t.previewPort!, new URL("/quit", s.origin), { cookie: s.cookie }).catch(
              () => {},
            );
          await server.catch(() => undefined);
        }
        await t?.close();
      });

      test("removed and added again: the old session is refused and its open WebSocket closed", async () => {
        const s = await sessionOf(VIEWER);
        assert.equal((await page(s)).status, 200);
        const { ws, closed } = await socketOf(s);
        assert.equal(ws.readyState, WebSocket.OPEN);

        const id = await memberId(VIEWER);
        assert.equal((await owner("DELETE", `/api/orgs/${org}/members/${id}`)).status, 204);
        await closed; // closed by the removal itself, before any request
        const back = await owner("PUT", `/api/orgs/${org}/members`, { email: VIEWER, role: "viewer" });
        assert.equal(back.status, 200, JSON.stringify(back.body));

        await refusedAsChanged(s);
        // a new link, asked for with the access the member holds now, works
        const fresh = await sessionOf(VIEWER);
        assert.equal((await page(fresh)).status, 200);
        (await socketOf(fresh)).ws.close();
      });

      test("given areas, or another role: the old session is refused and its WebSocket closed", async () => {
        const s = await sessionOf(VIEWER);
        const { closed } = await socketOf(s);
        const put = await owner("PUT", `/api/orgs/${org}/members`, {
          email: VIEWER,
          role: "viewer",
          areas: ["proj"],
        });
        assert.equal(put.status, 200, JSON.stringify(put.body));
        await closed;
        await refusedAsChanged(s);
        // fenced now, the member gets no new link either
        const fenced = await t.inject({
          method: "GET",
          url: `/api/agents/${agent.id}/ports/${P()}/`,
          headers: { "x-forwarded-email": VIEWER },
        });
        assert.equal(fenced.statusCode, 403, fenced.body);

        // the whole home again, then a wider role: even a gain ends the session it had
        const whole = await owner("PUT", `/api/orgs/${org}/members`, {
          email: VIEWER,
          role: "viewer",
          areas: [],
        });
        assert.equal(whole.status, 200, JSON.stringify(whole.body));
        const s2 = await sessionOf(VIEWER);
        const second = await socketOf(s2);
        // a PUT that changes nothing leaves the session and its socket alone
        assert.equal(
          (await owner("PUT", `/api/orgs/${org}/members`, { email: VIEWER, role: "viewer" })).status,
          200,
        );
        assert.equal((await page(s2)).status, 200);
        assert.equal(second.ws.readyState, WebSocket.OPEN);
        const admin = await owner("PUT", `/api/orgs/${org}/members`, { email: VIEWER, role: "admin" });
        assert.equal(admin.status, 200, JSON.stringify(admin.body));
        await second.closed;
        await refusedAsChanged(s2);
        // the owner's own sessions are untouched by another member's change
        assert.equal((await page(await sessionOf(OWNER))).status, 200);
      });
    },
  );
