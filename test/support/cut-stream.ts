// A model provider on loopback, speaking Anthropic's streamed Messages, that streams 400
// characters of text and drops the connection before it tells its usage (message_delta): what
// the gateway counts of a call cut short.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface CutStream {
  /** The provider's base URL (…/v1). */
  base: string;
  close(): Promise<void>;
}

/**
 * `message`: the message_start's message (its usage as the provider tells it first);
 * `blockStart`: a content_block_start before the text; `dropAfterMs`: the wait before the drop.
 */
export async function startCutStream(o: {
  message: Record<string, unknown>;
  blockStart?: boolean;
  dropAfterMs?: number;
}): Promise<CutStream> {
  const ev = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const start = o.blockStart
        ? ev("content_block_start", {
            type: "content_block_start",
            index: 0,
            content_block: { type: "text", text: "" },
          })
        : "";
      res.write(
        ev("message_start", {
          type: "message_start",
          message: { id: "m", type: "message", role: "assistant", content: [], ...o.message },
        }) +
          start +
          ev("content_block_delta", {
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: "x".repeat(400) },
          }),
        () => (o.dropAfterMs ? setTimeout(() => res.destroy(), o.dropAfterMs) : res.destroy()),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
