// The store suite, run on PGlite and on a real PostgreSQL server.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { eq, sql } from "drizzle-orm";
import { openStore, schema } from "../../src/store/index.js";
import { dbLegs } from "../support/db.js";

for (const leg of dbLegs) {
  describe(`store on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    test("migrations apply once, in order, and again is a no-op", async () => {
      const db = await leg.fresh();
      try {
        const a = await openStore({ databaseUrl: db.url });
        if (!db.url) {
          // PGlite in memory: migrate the same instance twice by reopening is not possible; check the journal
          const rows = await a.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
          assert.ok(Number((rows as { rows: { n: number }[] }).rows[0]?.n) >= 1);
          await a.close();
          return;
        }
        await a.close();
        const b = await openStore({ databaseUrl: db.url });
        const rows = await b.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
        const { readdir } = await import("node:fs/promises");
        const files = (await readdir(new URL("../../drizzle/", import.meta.url))).filter((f) =>
          f.endsWith(".sql"),
        );
        assert.equal(Number((rows as { rows: { n: number }[] }).rows[0]?.n), files.length);
        await b.close();
      } finally {
        await db.drop();
      }
    });

    test("constraints: one agent per slot, machines with agents stay, runs outlive agents", async () => {
      const db = await leg.fresh();
      const s = await openStore({ databaseUrl: db.url });
      try {
        await s.db.insert(schema.orgs).values({ id: "org_0000000000000001", name: "o" });
        await s.db.insert(schema.machines).values({
          id: "mch_0000000000000001",
          orgId: "org_0000000000000001",
          name: "m",
          maxWorkspaceMib: 100,
          memoryMib: 256,
          cpus: 1,
          trust: "isolated",
        });
        const agent = {
          orgId: "org_0000000000000001",
          machineId: "mch_0000000000000001",
          name: "a",
          maxWorkspaceMib: 10,
        };
        await s.db.insert(schema.agents).values({ ...agent, id: "agt_0000000000000001", slot: 0 });
        await assert.rejects(
          s.db.insert(schema.agents).values({ ...agent, id: "agt_0000000000000002", slot: 0 }),
        );
        await assert.rejects(
          s.db.insert(schema.agents).values({ ...agent, id: "agt_0000000000000003", slot: 400 }),
        );
        await assert.rejects(
          s.db.delete(schema.machines).where(eq(schema.machines.id, "mch_0000000000000001")),
        );
        await s.db.insert(schema.runs).values({
          id: "run_0000000000000001",
          orgId: "org_0000000000000001",
          agentId: "agt_0000000000000001",
          machineId: "mch_0000000000000001",
          kind: "command",
          status: "succeeded",
          argv: ["true"],
          timeoutS: 10,
        });
        await s.db
          .insert(schema.runEvents)
          .values({ runId: "run_0000000000000001", type: "started", data: { a: 1 } });
        await s.db.delete(schema.agents).where(eq(schema.agents.id, "agt_0000000000000001"));
        const runs = await s.db.select().from(schema.runs);
        assert.equal(runs.length, 1);
        assert.deepEqual(runs[0]?.argv, ["true"]);
        const events = await s.db.select().from(schema.runEvents);
        assert.deepEqual(events[0]?.data, { a: 1 });
      } finally {
        await s.close();
        await db.drop();
      }
    });

    test("a failed transaction leaves nothing behind", async () => {
      const db = await leg.fresh();
      const s = await openStore({ databaseUrl: db.url });
      try {
        await assert.rejects(
          s.db.transaction(async (tx) => {
            await tx.insert(schema.orgs).values({ id: "org_0000000000000009", name: "gone" });
            throw new Error("roll back");
          }),
        );
        assert.equal((await s.db.select().from(schema.orgs)).length, 0);
      } finally {
        await s.close();
        await db.drop();
      }
    });
  });
}
