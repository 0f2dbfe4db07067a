// A WebSocket client of the terminal for tests: what it printed, the JSON messages, its close.
import { WebSocket } from "ws";

export interface Tty {
  ws: WebSocket;
  /** Everything the terminal sent so far, as text. */
  out(): string;
  /** The JSON text frames received so far. */
  messages: any[];
  type(s: string): void;
  json(m: unknown): void;
  /** Waits until the output from `from` on matches. */
  expect(re: RegExp, from?: number, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Waits for a JSON message of this type. */
  message(type: string, timeoutMs?: number): Promise<any>;
  closed: Promise<{ code: number; reason: string }>;
}

export type Refusal = { status: number; body: any };

/** Opens the terminal's WebSocket; a refused upgrade resolves with its HTTP answer. */
export function openTty(url: string, headers: Record<string, string> = {}): Promise<Tty | Refusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    let text = "";
    const messages: any[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on("close", (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on("message", (data, isBinary) => {
      const b = Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer);
      if (isBinary) text += b.toString("utf8");
      else messages.push(JSON.parse(b.toString("utf8")));
    });
    ws.on("unexpected-response", (req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        req.destroy(); // with this listener, ending the refused request is the client's job
        let parsed: unknown = body;
        try {
          parsed = JSON.parse(body);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    ws.on("error", (err) => reject(err));
    ws.on("open", () => {
      const waitUntil = async (what: string, ok: () => boolean, timeoutMs: number) => {
        const deadline = Date.now() + timeoutMs;
        while (!ok()) {
          if (Date.now() > deadline)
            throw new Error(`timed out waiting for ${what}; the terminal printed:\n${text}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      resolve({
        ws,
        out: () => text,
        messages,
        type: (s) => ws.send(Buffer.from(s), { binary: true }),
        json: (m) => ws.send(JSON.stringify(m)),
        expect: async (re, from = 0, timeoutMs = 30_000) => {
          let m: RegExpMatchArray | null = null;
          await waitUntil(String(re), () => (m = text.slice(from).match(re)) !== null, timeoutMs);
          return m!;
        },
        message: async (type, timeoutMs = 30_000) => {
          await waitUntil(`a ${type} message`, () => messages.some((m) => m.type === type), timeoutMs);
          return messages.find((m) => m.type === type);
        },
        closed,
      });
    });
  });
}

export function isTty(x: Tty | Refusal): x is Tty {
  return "ws" in x;
}

/** Opens it and fails the test when it is refused. */
export async function tty(url: string, headers: Record<string, string> = {}): Promise<Tty> {
  const t = await openTty(url, headers);
  if (!isTty(t)) throw new Error(`the terminal was refused: ${t.status} ${JSON.stringify(t.body)}`);
  return t;
}
