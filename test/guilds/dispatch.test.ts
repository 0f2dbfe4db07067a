// Guild dispatch on a real server with real boxes and the scripted model: a message goes to
// the idle agent as a turn of its conversation with the guild, in turn among equals, to all
// with fan_out, never to an agent that holds no conversation; and a queued message survives
// the server's restart.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { putHomeFile, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { until } from "../schedules/support.js";

const script = JSON.stringify({ turns: Array.from({ length: 20 }, (_, i) => ({ text: `answer ${i}` })) });

for (const leg of dbLegs)
  test(
    `a guild's messages: to the idle agent, in turn, to all, and kept across a restart (${leg.name})`,
    { skip: leg.skip ?? boxSkipReason() ?? false },
    async () => {
      const db = await leg.fresh();
      const env: Record<string, string> = db.url ? { DATABASE_URL: db.url } : {};
      const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-dispatch-"));
      let t: TestServer | undefined;
      try {
        t = await startTestServer({ stateRoot, env });
        const call = (m: string, u: string, b?: unknown) => t!.call(m, u, b);
        const org = (await call("POST", "/api/orgs", { name: "dispatch" })).body;
        const machine = (await call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
        const assistant = async (name: string) => {
          const a = (
            await call("POST", "/api/agents", {
              org_id: org.id,
              machine_id: machine.id,
              name,
              kind: "assistant",
              model: { provider: "script", name: "s.json" },
            })
          ).body;
          await putHomeFile(t!, a.id, "s.json", script);
          return a;
        };
        const a = await assistant("a");
        const b = await assistant("b");
        const cmd = (await call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "c" }))
          .body;
        const guild = (await call("POST", "/api/guilds", { org_id: org.id, name: "crew" })).body;
        for (const x of [a, b, cmd])
          assert.equal(
            (await call("POST", `/api/guilds/${guild.id}/agents`, { agent_id: x.id })).status,
            204,
          );

        const send = async (guildId: string, body: Record<string, unknown>) => {
          const r = await call("POST", `/api/guilds/${guildId}/messages`, body);
          assert.equal(r.status, 202, JSON.stringify(r.body));
          return r.body;
        };
        const message = async (guildId: string, id: string) =>
          ((await call("GET", `/api/guilds/${guildId}/messages`)).body.items as any[]).find(
            (m) => m.id === id,
          );
        const dispatched = (guildId: string, id: string) =>
          until(
            () => message(guildId, id),
            (m) => m?.status === "dispatched",
            `message ${id} dispatched`,
            60_000,
          );
        const turnEnded = (runId: string) =>
          until(
            async () => (await call("GET", `/api/runs/${runId}`)).body,
            (r) => TERMINAL_STATUSES.includes(r.status),
            `turn ${runId} ended`,
            60_000,
          );

        // a holds its generation: the message goes to b, the idle one
        const hold = await call("POST", `/api/agents/${a.id}/runs`, {
          kind: "command",
          command: "while [ ! -e go ]; do sleep 0.05; done; rm go",
        });
        assert.equal(hold.status, 202);
        await until(
          async () => (await call("GET", `/api/runs/${hold.body.id}`)).body,
          (r) => r.status === "running",
          "holding",
        );
        const m1 = await send(guild.id, { text: "who is free?" });
        assert.equal(m1.status, "queued");
        assert.equal(m1.fan_out, false);
        const d1 = await dispatched(guild.id, m1.id);
        assert.equal(d1.targets.length, 1);
        assert.equal(d1.targets[0].agent_id, b.id, "the idle agent took it");
        const turn = await turnEnded(d1.targets[0].run_id);
        assert.equal(turn.status, "succeeded", JSON.stringify(turn));
        const conv = (await call("GET", `/api/conversations/${d1.targets[0].conversation_id}`)).body;
        assert.equal(conv.agent_id, b.id);
        assert.equal(conv.title, "guild crew");
        const msgs = (await call("GET", `/api/conversations/${conv.id}/messages`)).body.items;
        assert.deepEqual(
          msgs.map((x: any) => [x.role, x.text]),
          [
            ["user", "who is free?"],
            ["agent", "answer 0"],
          ],
        );
        await call("POST", `/api/agents/${a.id}/exec`, { command: "touch go" });
        await until(
          async () => (await call("GET", `/api/runs/${hold.body.id}`)).body,
          (r) => TERMINAL_STATUSES.includes(r.status),
          "released",
        );

        // both idle: in turn, the next after the last; the same conversation with the guild again
        const m2 = await send(guild.id, { text: "second" });
        const d2 = await dispatched(guild.id, m2.id);
        await turnEnded(d2.targets[0].run_id);
        const m3 = await send(guild.id, { text: "third" });
        const d3 = await dispatched(guild.id, m3.id);
        await turnEnded(d3.targets[0].run_id);
        assert.deepEqual(new Set([d2.targets[0].agent_id, d3.targets[0].agent_id]), new Set([a.id, b.id]));
        const toB = [d2, d3].find((d) => d.targets[0].agent_id === b.id)!;
        assert.equal(toB.targets[0].conversation_id, conv.id, "b's conversation with the guild goes on");

        // fan_out: every agent that holds conversations, never the command agent
        const m4 = await send(guild.id, { text: "all hands", fan_out: true });
        const d4 = await dispatched(guild.id, m4.id);
        assert.deepEqual(d4.targets.map((x: any) => x.agent_id).sort(), [a.id, b.id].sort());
        for (const x of d4.targets) await turnEnded(x.run_id);

        // a guild with no agent that can take it keeps the message queued, across a restart
        const lonely = (await call("POST", "/api/guilds", { org_id: org.id, name: "lonely" })).body;
        await call("POST", `/api/guilds/${lonely.id}/agents`, { agent_id: cmd.id });
        const m5 = await send(lonely.id, { text: "anyone?" });
        const waiting = await until(
          () => message(lonely.id, m5.id),
          (m) => m?.status_reason !== null,
          "said why it waits",
        );
        assert.equal(waiting.status, "queued");
        assert.match(waiting.status_reason, /no agent of the guild can take a message/);
        await t.server.close();
        t = undefined;
        t = await startTestServer({ stateRoot, env });
        const kept = await message(lonely.id, m5.id);
        assert.equal(kept.status, "queued", "still queued after the restart");
        assert.equal(kept.text, "anyone?");
        assert.equal((await call("POST", `/api/guilds/${lonely.id}/agents`, { agent_id: a.id })).status, 204);
        const d5 = await dispatched(lonely.id, m5.id);
        assert.equal(d5.targets[0].agent_id, a.id);
        const t5 = await turnEnded(d5.targets[0].run_id);
        assert.equal(t5.status, "succeeded", JSON.stringify(t5));

        // what the route refuses
        const empty = await call("POST", `/api/guilds/${guild.id}/messages`, { text: "" });
        assert.equal(empty.status, 400);
        assert.equal(empty.body.error.code, "request.invalid");
        const big = await call("POST", `/api/guilds/${guild.id}/messages`, { text: "x".repeat(300 * 1024) });
        assert.equal(big.status, 413);
        assert.equal(big.body.error.code, "run.input_too_large");
        assert.equal(
          (await call("POST", "/api/guilds/gld_0000000000000000/messages", { text: "x" })).status,
          404,
        );
      } finally {
        if (t) {
          for (const x of await t.server.provider.list())
            await t.server.provider.remove(x.id).catch(() => {});
          await t.server.close();
        }
        await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
        await db.drop();
      }
    },
  );
