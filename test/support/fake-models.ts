// Local stand-ins for model providers, on loopback, speaking their real wire formats: the
// Anthropic Messages API and the OpenAI Chat Completions API, each as one JSON answer or as a
// stream of server-sent events. They answer from a script of turns (src/models/script.ts),
// the turn being the number of the model's answers already in the request, and keep every
// request they were sent (headers and body) for the test to look at.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseScript, type ScriptTurn } from "../../src/models/script.js";

export interface FakeRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface FakeModelServer {
  /** The base URL a provider takes (it ends in /v1). */
  baseUrl: string;
  requests: FakeRequest[];
  /** Replaces the script; `turns` may also be the text of a script file. */
  script(turns: ScriptTurn[] | string): void;
  close(): Promise<void>;
}

type Wire = "anthropic" | "openai";

const estimate = (s: string): number => Math.ceil(s.length / 4);

/** What a turn uses; like a provider, never more output than the request's max output tokens. */
function usageOf(turn: ScriptTurn, body: any): { input: number; output: number } {
  const max = [body?.max_tokens, body?.max_completion_tokens, body?.max_output_tokens].find(
    (v): v is number => typeof v === "number",
  );
  const output =
    turn.usage?.output_tokens ?? estimate((turn.text ?? "") + JSON.stringify(turn.tool_calls ?? []).slice(2));
  return {
    input: turn.usage?.input_tokens ?? estimate(JSON.stringify(body)),
    output: max !== undefined ? Math.min(output, max) : output,
  };
}

function sse(res: http.ServerResponse, events: { event?: string; data: unknown }[]): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const e of events) {
    if (e.event) res.write(`event: ${e.event}\n`);
    res.write(`data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`);
  }
  res.end();
}

const pieces = (s: string, n = 7): string[] => {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out.length ? out : [""];
};

function anthropicAnswer(res: http.ServerResponse, body: any, turn: ScriptTurn, index: number): void {
  const u = usageOf(turn, body);
  const calls = turn.tool_calls ?? [];
  const content: any[] = [];
  if (turn.text) content.push({ type: "text", text: turn.text });
  calls.forEach((c, i) =>
    content.push({ type: "tool_use", id: `toolu_${index}_${i}`, name: c.name, input: c.input ?? {} }),
  );
  const stop = calls.length ? "tool_use" : "end_turn";
  const id = `msg_fake_${index}`;
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id,
        type: "message",
        role: "assistant",
        model: body.model,
        content,
        stop_reason: stop,
        stop_sequence: null,
        usage: { input_tokens: u.input, output_tokens: u.output },
      }),
    );
    return;
  }
  const ev: { event: string; data: unknown }[] = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: u.input, output_tokens: 1 },
        },
      },
    },
  ];
  content.forEach((block, i) => {
    if (block.type === "text") {
      ev.push({
        event: "content_block_start",
        data: { type: "content_block_start", index: i, content_block: { type: "text", text: "" } },
      });
      for (const p of pieces(block.text))
        ev.push({
          event: "content_block_delta",
          data: { type: "content_block_delta", index: i, delta: { type: "text_delta", text: p } },
        });
    } else {
      ev.push({
        event: "content_block_start",
        data: {
          type: "content_block_start",
          index: i,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        },
      });
      for (const p of pieces(JSON.stringify(block.input)))
        ev.push({
          event: "content_block_delta",
          data: {
            type: "content_block_delta",
            index: i,
            delta: { type: "input_json_delta", partial_json: p },
          },
        });
    }
    ev.push({ event: "content_block_stop", data: { type: "content_block_stop", index: i } });
  });
  ev.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: u.output },
    },
  });
  ev.push({ event: "message_stop", data: { type: "message_stop" } });
  sse(res, ev);
}

function openaiAnswer(res: http.ServerResponse, body: any, turn: ScriptTurn, index: number): void {
  const u = usageOf(turn, body);
  const calls = (turn.tool_calls ?? []).map((c, i) => ({
    id: `call_${index}_${i}`,
    type: "function",
    function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
  }));
  const finish = calls.length ? "tool_calls" : "stop";
  const id = `chatcmpl-fake-${index}`;
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output };
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id,
        object: "chat.completion",
        created,
        model: body.model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: turn.text ?? null,
              ...(calls.length ? { tool_calls: calls } : {}),
            },
            finish_reason: finish,
          },
        ],
        usage,
      }),
    );
    return;
  }
  const chunk = (delta: unknown, finish_reason: string | null = null) => ({
    data: {
      id,
      object: "chat.completion.chunk",
      created,
      model: body.model,
      choices: [{ index: 0, delta, finish_reason }],
    },
  });
  const ev: { data: unknown }[] = [chunk({ role: "assistant", content: "" })];
  if (turn.text) for (const p of pieces(turn.text)) ev.push(chunk({ content: p }));
  calls.forEach((c, i) => {
    ev.push(
      chunk({
        tool_calls: [
          { index: i, id: c.id, type: "function", function: { name: c.function.name, arguments: "" } },
        ],
      }),
    );
    for (const p of pieces(c.function.arguments))
      ev.push(chunk({ tool_calls: [{ index: i, function: { arguments: p } }] }));
  });
  ev.push(chunk({}, finish));
  if (body.stream_options?.include_usage)
    ev.push({
      data: { id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage },
    });
  ev.push({ data: "[DONE]" });
  sse(res, ev);
}

function failure(res: http.ServerResponse, wire: Wire, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(
    JSON.stringify(
      wire === "anthropic"
        ? { type: "error", error: { type: status === 429 ? "rate_limit_error" : "api_error", message } }
        : { error: { message, type: status === 429 ? "rate_limit_exceeded" : "server_error", code: null } },
    ),
  );
}

async function start(wire: Wire, turns: ScriptTurn[] | string): Promise<FakeModelServer> {
  let script = typeof turns === "string" ? parseScript(turns, "fake") : turns;
  const requests: FakeRequest[] = [];
  const path = wire === "anthropic" ? "/v1/messages" : "/v1/chat/completions";
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return failure(res, wire, 400, "the body is not JSON");
      }
      requests.push({ path: req.url ?? "", headers: req.headers, body });
      if (req.method !== "POST" || req.url !== path)
        return failure(res, wire, 404, `no route ${req.method} ${req.url}`);
      const messages: { role: string }[] = Array.isArray(body.messages) ? body.messages : [];
      const index = messages.filter((m) => m.role === "assistant").length;
      const turn = script[index];
      if (!turn) return failure(res, wire, 400, `the fake has no turn ${index + 1}`);
      if (turn.error) return failure(res, wire, turn.error.status, turn.error.message);
      if (wire === "anthropic") anthropicAnswer(res, body, turn, index);
      else openaiAnswer(res, body, turn, index);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script(t) {
      script = typeof t === "string" ? parseScript(t, "fake") : t;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export const startFakeAnthropic = (turns: ScriptTurn[] | string = []): Promise<FakeModelServer> =>
  start("anthropic", turns);
export const startFakeOpenAI = (turns: ScriptTurn[] | string = []): Promise<FakeModelServer> =>
  start("openai", turns);
