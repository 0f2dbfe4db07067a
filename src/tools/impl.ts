// What every tool implementation shares: its face for the model, how it runs, and the
// failures it answers the model with.
import type { KeepWaiting } from "../approvals/types.js";
import type { Canonicaliser } from "./canonical.js";
import type { RunTool } from "./types.js";

/** A tool's failure the model is told about as it is (a bad argument, a refused path, ...). */
export class ToolFailure extends Error {}

export interface ToolImpl {
  tool: RunTool;
  kind: "builtin" | "http" | "mcp";
  /** The MCP server a tool belongs to. */
  server?: string;
  /**
   * The arguments a policy can test, each put in its canonical form (canonical.ts) before the
   * policy decides; `run` is given exactly those values.
   */
  canonical?: Record<string, Canonicaliser>;
  /** Runs the call (already allowed by the policy); throws ToolFailure or any error to fail it. */
  run(args: Record<string, unknown>, signal: AbortSignal, call?: CallInfo): Promise<string>;
}

/** The call a tool runs for: what a tool that waits for a person (secret_request) asks with. */
interface CallInfo {
  callId: string;
  /** SHA-256 of the canonical arguments (as an approval names them). */
  argsSha256: string;
  keep?: KeepWaiting | undefined;
}

/** A tool's parameters: an object of these properties, the required ones named (none: no list). */
export const params = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: "object" as const,
  properties,
  ...(required.length ? { required } : {}),
});

/** A string parameter and what it holds. */
export const textParam = (description: string) => ({ type: "string", description });

/** The most text a tool answers the model with; past it the answer says how much was cut. */
export const MAX_OUTPUT_BYTES = 64 * 1024;

/** Cuts text to MAX_OUTPUT_BYTES (on a character boundary), saying how much was left out. */
export function bounded(text: string, max = MAX_OUTPUT_BYTES): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= max) return text;
  const kept = bytes
    .subarray(0, max)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return `${kept}\n[... ${bytes.length - Buffer.byteLength(kept)} more bytes not shown]`;
}

export function str(
  args: Record<string, unknown>,
  name: string,
  opts: { optional: true },
): string | undefined;
export function str(args: Record<string, unknown>, name: string): string;
export function str(
  args: Record<string, unknown>,
  name: string,
  opts?: { optional: true },
): string | undefined {
  const v = args[name];
  if (v === undefined || v === null) {
    if (opts?.optional) return undefined;
    throw new ToolFailure(`the argument "${name}" is required`);
  }
  if (typeof v !== "string") throw new ToolFailure(`the argument "${name}" must be a string`);
  return v;
}

export function num(args: Record<string, unknown>, name: string): number | undefined {
  const v = args[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new ToolFailure(`the argument "${name}" must be a number`);
  return v;
}

/** Reads a fetch answer's body up to `max` bytes, saying whether more was left. */
export async function readBody(res: Response, max: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let length = 0;
  let truncated = false;
  if (res.body) {
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = max - length;
      if (value.length > room) {
        chunks.push(Buffer.from(value.subarray(0, room)));
        length = max;
        truncated = true;
        await reader.cancel();
        break;
      }
      chunks.push(Buffer.from(value));
      length += value.length;
    }
  }
  return { body: Buffer.concat(chunks, length), truncated };
}

/** A body as the model sees it: text as is, anything else by its type and size. */
export function bodyText(contentType: string, body: Buffer): string {
  const type = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  const textual =
    type === "" ||
    type.startsWith("text/") ||
    /^application\/(.+\+)?(json|xml|javascript|x-www-form-urlencoded|yaml|x-yaml|toml|graphql|ld\+json)$/.test(
      type,
    );
  if (textual && !body.subarray(0, 8192).includes(0)) return body.toString("utf8");
  return `[${body.length} bytes of ${type || "binary data"}, not shown]`;
}
