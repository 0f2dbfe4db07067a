// What a model call used and how it ended, read from its answer (one JSON body or a stream of
// server-sent events) in the wire format it speaks, for the gateway's HTTP face (http.ts).

/** The formats the face speaks. */
export type Wire = "anthropic" | "chat" | "responses";

export type J = Record<string, unknown>;

/** A field of a parsed JSON value down a path, or undefined. */
export function at(v: unknown, ...path: (string | number)[]): unknown {
  let cur = v;
  for (const k of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, unknown>)[k];
  }
  return cur;
}
export const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
export const obj = (v: unknown): J | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as J) : undefined;

/** What a call used and how it ended, read from its answer (whole or streamed). */
export class UsageMeter {
  tokensIn = 0;
  tokensOut = 0;
  finish: string | null = null;
  /** Whether the answer's final usage was read (else its counts are estimated from what flowed). */
  complete = false;
  /** The characters of text, reasoning and tool input the answer streamed. */
  chars = 0;
  /** The bytes of the answer read. */
  bytes = 0;
  #buf = "";
  #data: string[] = [];

  constructor(private readonly wire: Wire) {}

  /** One JSON answer. */
  whole(body: unknown): void {
    const b = obj(body);
    if (!b) return;
    if (obj(b.usage)) this.complete = true;
    if (this.wire === "anthropic") {
      this.#anthropicUsage(obj(b.usage));
      this.finish = str(b.stop_reason) ?? this.finish;
    } else if (this.wire === "chat") {
      this.#chatUsage(obj(b.usage));
      this.finish = str(at(b, "choices", 0, "finish_reason")) ?? this.finish;
    } else this.#response(b);
  }

  /** A piece of a stream of server-sent events. */
  stream(chunk: Buffer): void {
    this.bytes += chunk.length;
    this.#buf += chunk.toString("utf8");
    let i: number;
    while ((i = this.#buf.indexOf("\n")) >= 0) {
      const line = this.#buf.slice(0, i).replace(/\r$/, "");
      this.#buf = this.#buf.slice(i + 1);
      if (line === "") this.#dispatch();
      else if (line.startsWith("data:")) this.#data.push(line.slice(5).replace(/^ /, ""));
    }
  }

  end(): void {
    if (this.#buf) this.stream(Buffer.from("\n"));
    this.#dispatch();
  }

  #dispatch(): void {
    if (this.#data.length === 0) return;
    const text = this.#data.join("\n");
    this.#data = [];
    if (text === "[DONE]") return;
    let e: J | undefined;
    try {
      e = obj(JSON.parse(text));
    } catch {
      return;
    }
    if (!e) return;
    this.#text(e);
    if (this.wire === "anthropic") {
      if (e.type === "message_start") {
        this.#anthropicUsage(obj(at(e, "message", "usage")));
      } else if (e.type === "message_delta") {
        if (obj(e.usage)) this.complete = true;
        this.#anthropicUsage(obj(e.usage));
        this.finish = str(at(e, "delta", "stop_reason")) ?? this.finish;
      }
    } else if (this.wire === "chat") {
      if (obj(e.usage)) this.complete = true;
      this.#chatUsage(obj(e.usage));
      const f = str(at(e, "choices", 0, "finish_reason"));
      if (f) this.finish = f;
    } else if (
      e.type === "response.completed" ||
      e.type === "response.incomplete" ||
      e.type === "response.failed"
    ) {
      if (obj(obj(e.response)?.usage)) this.complete = true;
      this.#response(obj(e.response) ?? {});
    }
  }

  /** Counts the characters an event streams (text, reasoning, tool input), for an estimate. */
  #text(e: J): void {
    const add = (v: unknown) => {
      if (typeof v === "string") this.chars += v.length;
    };
    if (this.wire === "anthropic") {
      const d = obj(e.delta);
      if (e.type === "content_block_delta" && d) {
        add(d.text);
        add(d.partial_json);
        add(d.thinking);
      }
    } else if (this.wire === "chat") {
      const choices = Array.isArray(e.choices) ? e.choices : [];
      for (const c of choices) {
        const d = obj(obj(c)?.delta);
        if (!d) continue;
        add(d.content);
        add(d.reasoning_content);
        add(d.reasoning);
        for (const t of Array.isArray(d.tool_calls) ? d.tool_calls : []) add(at(t, "function", "arguments"));
      }
    } else if (typeof e.type === "string" && e.type.endsWith(".delta")) add(e.delta);
  }

  // Anthropic: input counts what was read from and written to the cache too; a stream's
  // message_delta carries the output so far (cumulative)
  #anthropicUsage(u: J | undefined): void {
    if (!u) return;
    const num = (k: string) => (typeof u[k] === "number" ? u[k] : null);
    const input = [num("input_tokens"), num("cache_creation_input_tokens"), num("cache_read_input_tokens")];
    if (input.some((x) => x !== null)) this.tokensIn = input.reduce<number>((a, x) => a + (x ?? 0), 0);
    const out = num("output_tokens");
    if (out !== null) this.tokensOut = out;
  }

  #chatUsage(u: J | undefined): void {
    if (!u) return;
    if (typeof u.prompt_tokens === "number") this.tokensIn = u.prompt_tokens;
    if (typeof u.completion_tokens === "number") this.tokensOut = u.completion_tokens;
  }

  #response(r: J): void {
    const u = obj(r.usage);
    if (u && typeof u.input_tokens === "number") this.tokensIn = u.input_tokens;
    if (u && typeof u.output_tokens === "number") this.tokensOut = u.output_tokens;
    const status = str(r.status);
    const why = str(at(r, "incomplete_details", "reason"));
    if (status) this.finish = why ? `${status}: ${why}` : status;
  }
}
