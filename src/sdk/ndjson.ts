// Newline-delimited JSON from a byte stream, one parsed value per line.
import { WarrenApiError } from "./errors.js";

/** Yields each non-empty line of `body` parsed as JSON; a line that is not JSON is a `response.invalid` error. */
export async function* ndjson(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffered = "";
  let done = false;
  try {
    while (!done) {
      const chunk = await read(reader);
      done = chunk.done;
      buffered += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      let nl = buffered.indexOf("\n");
      while (nl !== -1) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const value = parseLine(line);
        if (value !== undefined) yield value;
        nl = buffered.indexOf("\n");
      }
    }
    const value = parseLine(buffered);
    if (value !== undefined) yield value;
  } finally {
    // Leaving early (a consumer's break) closes the answer, which tells the server to stop.
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

type Reader = ReadableStreamDefaultReader<Uint8Array>;

async function read(reader: Reader): Promise<Awaited<ReturnType<Reader["read"]>>> {
  try {
    return await reader.read();
  } catch (err) {
    if (err instanceof Error && err.name === "AbortError") throw err;
    throw new WarrenApiError(
      0,
      "network",
      "the connection closed in the middle of the answer; the server may have stopped",
      {
        cause: err,
      },
    );
  }
}

function parseLine(line: string): unknown {
  const text = line.trim();
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new WarrenApiError(0, "response.invalid", `a streamed line is not JSON: ${text.slice(0, 120)}`, {
      cause: err,
    });
  }
}
