// The egress record on both databases, without a box: a bridged connection handed to the
// server's bridges as boxd would (its uid names the agent), decisions stored and listed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { newAgent, orgAndMachine } from "../support/org.js";
import { bridgeFront, type BridgeFront } from "../support/bridge.js";

for (const leg of dbLegs) {
  describe(`the egress record on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let front: BridgeFront | undefined;
    let machine: { id: string };
    let a: { id: string; uid: number };

    before(async () => {
      t = await startTestServer({ leg, egressHosts: {} });
      const made = await orgAndMachine(t.call, "rec");
      machine = made.machine;
      a = await newAgent(t.call, made, { name: "a" });
      front = await bridgeFront(t, machine.id);
    });
    after(async () => {
      await front?.close();
      await t?.close();
    });

    /** Opens a connection the bridges take as agent `uid`'s, sends `text`, reads the answer. */
    const bridged = (uid: number, text: string): Promise<string> => front!.bridged(uid, text);

    test("a refusal is answered, stored and listed; the filter and the pages work", async () => {
      for (const host of ["one.test", "two.test", "three.test"]) {
        const answer = await bridged(a.uid, `CONNECT ${host}:443 HTTP/1.1\r\nHost: ${host}:443\r\n\r\n`);
        assert.match(answer, new RegExp(`^HTTP/1.1 403 Forbidden\\r\\n[^]*${host}:443 is not in`));
      }
      const all = await t.call("GET", `/api/agents/${a.id}/egress?decision=refused&limit=2`);
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.deepEqual(
        all.body.items.map((i: { host: string }) => i.host),
        ["three.test", "two.test"],
      );
      assert.equal(all.body.items[0].bytes_out, 0);
      assert.equal(all.body.items[0].port, 443);
      assert.equal(all.body.items[0].method, undefined);
      const next = await t.call(
        "GET",
        `/api/agents/${a.id}/egress?decision=refused&limit=2&before=${all.body.next}`,
      );
      assert.deepEqual(
        next.body.items.map((i: { host: string }) => i.host),
        ["one.test"],
      );
      assert.equal(next.body.next, undefined);
      const allowed = await t.call("GET", `/api/agents/${a.id}/egress?decision=allowed`);
      assert.deepEqual(allowed.body, { items: [] });
    });

    test("a uid of no agent of the machine is closed unanswered, and records nothing", async () => {
      const answer = await bridged(a.uid + 7, "CONNECT one.test:443 HTTP/1.1\r\n\r\n");
      assert.equal(answer, "");
      const list = await t.call("GET", `/api/agents/${a.id}/egress?limit=500`);
      assert.equal(list.body.items.length, 3);
    });

    test("an unknown agent is 404", async () => {
      const r = await t.call("GET", "/api/agents/agt_aaaaaaaaaaaaaaaa/egress");
      assert.equal(r.status, 404);
    });
  });
}
