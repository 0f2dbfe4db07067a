// A local stand-in for the OpenAI Responses API (POST /v1/responses), on loopback, speaking its
// real wire format: one JSON answer or a stream of server-sent events (response.created, output
// items added and done, text deltas, response.completed with usage). It answers from a script of
// turns, the turn being the number of the model's answers already in the request's input (its
// messages and its function calls), and keeps every request for the test to look at.
//
// A scripted tool call names a tool by a prefix (`shell`: the first function tool of the request
// whose name starts with it) and gives a command; its arguments are built from that tool's own
// parameters (an array `command` takes ["bash", "-lc", text], a string one the text itself).
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ResponsesTurn {
  text?: string;
  /** One call of a tool of the request: the first whose name starts with `tool`. */
  call?: { tool: string; command: string };
  usage?: { input_tokens: number; output_tokens: number };
  error?: { status: number; message: string };
}

export interface FakeResponsesServer {
  baseUrl: string;
  requests: { path: string; headers: http.IncomingHttpHeaders; body: any }[];
  close(): Promise<void>;
}

/** How many answers of the model the input already holds. */
function turnOf(input: unknown): number {
  if (!Array.isArray(input)) return 0;
  let n = 0;
  for (const it of input as { type?: string; role?: string }[])
    if ((it.type === "message" || it.type === undefined) && it.role === "assistant") n++;
    else if (it.type === "function_call" || it.type === "custom_tool_call" || it.type === "local_shell_call")
      n++;
  return n;
}

function argsFor(tool: any, command: string): string {
  const props = tool?.parameters?.properties ?? {};
  const key = ["command", "cmd", "script"].find((k) => k in props) ?? "command";
  const p = props[key];
  const value = p?.type === "array" ? ["bash", "-lc", command] : command;
  return JSON.stringify({ [key]: value });
}

export async function startFakeResponses(turns: ResponsesTurn[]): Promise<FakeResponsesServer> {
  const requests: FakeResponsesServer["requests"] = [];
  let seq = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ error: { message: "the body is not JSON", type: "invalid_request_error" } }),
        );
        return;
      }
      requests.push({ path: req.url ?? "", headers: req.headers, body });
      const fail = (status: number, message: string) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            error: { message, type: status === 429 ? "rate_limit_exceeded" : "server_error", code: null },
          }),
        );
      };
      if (req.method !== "POST" || req.url !== "/v1/responses")
        return fail(404, `no route ${req.method} ${req.url}`);
      const index = turnOf(body.input);
      const turn = turns[index];
      if (!turn) return fail(400, `the fake has no turn ${index + 1}`);
      if (turn.error) return fail(turn.error.status, turn.error.message);
      const id = `resp_fake_${++seq}`;
      const output: any[] = [];
      if (turn.text !== undefined)
        output.push({
          type: "message",
          id: `msg_${seq}`,
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: turn.text, annotations: [] }],
        });
      if (turn.call) {
        const tool = (body.tools ?? []).find(
          (t: any) =>
            t.type === "function" && typeof t.name === "string" && t.name.startsWith(turn.call!.tool),
        );
        if (!tool) return fail(400, `the request has no function tool named ${turn.call.tool}*`);
        output.push({
          type: "function_call",
          id: `fc_${seq}`,
          call_id: `call_${seq}`,
          name: tool.name,
          arguments: argsFor(tool, turn.call.command),
          status: "completed",
        });
      }
      const usage = {
        input_tokens: turn.usage?.input_tokens ?? 100,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: turn.usage?.output_tokens ?? 10,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: (turn.usage?.input_tokens ?? 100) + (turn.usage?.output_tokens ?? 10),
      };
      const response = {
        id,
        object: "response",
        created_at: Math.floor(Date.now() / 1000),
        status: "completed",
        model: body.model,
        output,
        usage,
      };
      if (!body.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(response));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const send = (type: string, data: Record<string, unknown>) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      send("response.created", { response: { ...response, status: "in_progress", output: [], usage: null } });
      output.forEach((item, i) => {
        send("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress" } });
        if (item.type === "message") {
          const text: string = item.content[0].text;
          for (let k = 0; k < text.length; k += 6)
            send("response.output_text.delta", {
              item_id: item.id,
              output_index: i,
              content_index: 0,
              delta: text.slice(k, k + 6),
            });
        }
        send("response.output_item.done", { output_index: i, item });
      });
      send("response.completed", { response });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
