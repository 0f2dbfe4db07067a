// A model on loopback speaking the OpenAI chat completions stream that sends the first words of
// its answer at once and the rest only when the test lets it: what a page or a terminal shows
// while a model is still writing can then be checked without racing it.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface HeldModel {
  /** The base URL an `openai-compatible` model takes (it ends in /v1). */
  baseUrl: string;
  port: number;
  /** Lets every answer (the waiting ones and those to come) finish. */
  release(): void;
  close(): Promise<void>;
}

export async function startHeldModel(first: string, rest: string): Promise<HeldModel> {
  let release: () => void = () => {};
  const released = new Promise<void>((r) => (release = r));
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; stream?: boolean };
      const base = { id: "chatcmpl-held", object: "chat.completion.chunk", created: 0, model: body.model };
      const usage = { prompt_tokens: 10, completion_tokens: 8, total_tokens: 18 };
      if (!body.stream) {
        // a client that does not stream gets the whole answer at once (and a test of streaming fails)
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            ...base,
            object: "chat.completion",
            choices: [
              { index: 0, message: { role: "assistant", content: first + rest }, finish_reason: "stop" },
            ],
            usage,
          }),
        );
        return;
      }
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      const delta = (d: unknown, finish_reason: string | null = null) =>
        send({ ...base, choices: [{ index: 0, delta: d, finish_reason }] });
      res.writeHead(200, { "content-type": "text/event-stream" });
      delta({ role: "assistant", content: "" });
      delta({ content: first });
      void released.then(() => {
        delta({ content: rest });
        delta({}, "stop");
        send({ ...base, choices: [], usage });
        res.end("data: [DONE]\n\n");
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    release: () => release(),
    close: () =>
      new Promise<void>((r) => {
        release();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
