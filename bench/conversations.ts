// A conversation's live stream, timed: a model on loopback speaking the OpenAI chat
// completions stream (as the gateway sees a provider) writes its answer token by token and
// notes when its first token left; the bench's client reads the conversation's server-sent
// events over real HTTP. Rows: a message posted to the stream's first event of its turn,
// the model's first token to the stream's first piece of text (target ≤ 50 ms), and the
// events per second a client reads of the whole stream, resumed from its start.
//
//   node --import tsx bench/conversations.ts          (this section alone)
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../test/support/server.js";
import { jsonClient } from "./clients.js";
import { summarize, type Sample } from "./stats.js";

export interface ConversationFigures {
  /** Message posted to the first event of its turn on the stream (ms). */
  firstEvent: Sample;
  /** The model's first token sent to the stream's first text piece received (ms). */
  firstText: Sample;
  /** Events per second a client reads of the whole stream, resumed from its start. */
  eventsPerS: number;
  events: number;
  tokens: number;
  turns: number;
}

/** The model: each answer is `tokens` tokens, streamed two at a time. */
async function tokenModel(tokens: number) {
  const firstSent: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
      const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: body.model };
      const send = (choices: unknown[], extra: object = {}) =>
        res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
      res.writeHead(200, { "content-type": "text/event-stream" });
      send([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
      // two tokens a timer's turn apart, as a fast model writes
      let i = 0;
      const more = () => {
        if (i === 0) firstSent.push(performance.now());
        for (const end = Math.min(tokens, i + 2); i < end; i++)
          send([{ index: 0, delta: { content: `word${i} ` }, finish_reason: null }]);
        if (i < tokens) return void setTimeout(more, 1);
        send([{ index: 0, delta: {}, finish_reason: "stop" }]);
        send([], { usage: { prompt_tokens: 10, completion_tokens: tokens, total_tokens: 10 + tokens } });
        res.end("data: [DONE]\n\n");
      };
      more();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    firstSent,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The conversation's events as they come: each with the time it was read. */
function follow(url: string, after: number) {
  const seen: { id: number; type: string; stream?: string; at: number }[] = [];
  const waiters: (() => void)[] = [];
  const req = http.get(
    url,
    { headers: { accept: "text/event-stream", "last-event-id": String(after) } },
    (res) => {
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        const at = performance.now();
        buf += text;
        for (let end = buf.indexOf("\n\n"); end >= 0; end = buf.indexOf("\n\n")) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (!id || !data) continue;
          const e = JSON.parse(data) as { type: string; data?: { stream?: string } };
          seen.push({
            id: Number(id),
            type: e.type,
            ...(e.data?.stream ? { stream: e.data.stream } : {}),
            at,
          });
        }
        for (const w of waiters.splice(0)) w();
      });
    },
  );
  req.on("error", () => undefined);
  return {
    seen,
    /** Resolves once `ok` holds of the events read (rejects after `ms`). */
    until(ok: () => boolean, ms = 60_000): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error("the conversation's stream did not go on in time")),
          ms,
        );
        const check = () => {
          if (ok()) {
            clearTimeout(timer);
            resolve();
          } else waiters.push(check);
        };
        check();
      });
    },
    close: () => req.destroy(),
  };
}

export async function benchConversations(o: {
  turns: number;
  tokens: number;
  log: (line: string) => void;
}): Promise<ConversationFigures> {
  const model = await tokenModel(o.tokens);
  const t = await startTestServer({
    listen: true,
    env: { BOX_IDLE_S: "3600", WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${model.port}` },
  });
  const api = jsonClient(t.url!, 8);
  let machine: string | undefined;
  try {
    const { ok } = api;
    const org = await ok("POST", "/api/orgs", { name: "talk" });
    machine = (await ok("POST", "/api/machines", { org_id: org.id, name: "talk" })).id as string;
    const agent = await ok("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine,
      name: "talker",
      kind: "assistant",
      model: {
        provider: "openai-compatible",
        name: "bench-model",
        base_url: `http://127.0.0.1:${model.port}/v1`,
      },
    });
    const conv = await ok("POST", `/api/agents/${agent.id}/conversations`, { title: "bench" });
    o.log(`conversations: ${o.turns} turns of ${o.tokens} tokens each`);
    const firstEvent: number[] = [];
    const firstText: number[] = [];
    for (let turn = 0; turn < o.turns; turn++) {
      // what the stream already holds (the turns before, all ended): this turn's come after it
      const after = (await ok("GET", `/api/conversations/${conv.id}`)).last_event_id as number;
      const stream = follow(`${t.url}/api/conversations/${conv.id}/events`, after);
      try {
        const posted = performance.now();
        const sent = await ok("POST", `/api/conversations/${conv.id}/messages`, { text: `turn ${turn}` });
        const runId = sent.run_id as string;
        await stream.until(() => stream.seen.some((e) => e.type === "exit"), 120_000);
        const mine = stream.seen;
        const first = mine[0]!;
        const text = mine.filter((e) => e.type === "output" && e.stream === "text");
        if (text.length === 0) throw new Error(`turn ${turn} (run ${runId}) streamed no text`);
        firstEvent.push(first.at - posted);
        firstText.push(text[0]!.at - model.firstSent[turn]!);
        // the turn ends (its answer stored) before the next message, so each turn is timed alone
        for (;;) {
          const run = await ok("GET", `/api/runs/${runId}`);
          if (["succeeded", "failed", "timed_out", "cancelled", "lost"].includes(run.status as string)) {
            if (run.status !== "succeeded") throw new Error(`turn ${turn} ended ${run.status as string}`);
            break;
          }
          await stream.until(() => stream.seen.length > mine.length, 1000).catch(() => undefined);
        }
      } finally {
        stream.close();
      }
    }
    // the whole stream read again from its start, as a client that resumes from nothing
    const last = (await ok("GET", `/api/conversations/${conv.id}`)).last_event_id as number;
    const t0 = performance.now();
    const again = follow(`${t.url}/api/conversations/${conv.id}/events`, 0);
    try {
      await again.until(() => again.seen.length > 0 && again.seen[again.seen.length - 1]!.id >= last);
    } finally {
      again.close();
    }
    const eventsPerS = again.seen.length / ((performance.now() - t0) / 1000);
    return {
      firstEvent: summarize(firstEvent),
      firstText: summarize(firstText),
      eventsPerS,
      events: again.seen.length,
      tokens: o.tokens,
      turns: o.turns,
    };
  } finally {
    if (machine) await api.call("POST", `/api/machines/${machine}/stop`).catch(() => undefined);
    api.close();
    await t.close();
    await model.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const f = await benchConversations({ turns: 10, tokens: 400, log: (l) => process.stderr.write(`${l}\n`) });
  console.log(JSON.stringify(f, null, 2));
}
