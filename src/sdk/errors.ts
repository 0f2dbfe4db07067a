// The one error the SDK throws for anything the server (or the way to it) refused.
import type { ErrorCode } from "../contract/errors.js";

export type { ErrorCode };

/**
 * Codes the client gives itself: `network` (the server could not be reached, or the
 * connection closed mid-answer), `timeout` (no answer in time, or a wait ran out),
 * `response.invalid` (an answer that is not what the API says), `stream.incomplete` (a
 * stream that ended early), `http.<status>` (an error answer without the envelope).
 */
export type ClientErrorCode =
  "network" | "timeout" | "response.invalid" | "stream.incomplete" | `http.${number}`;

/** Every code a WarrenApiError may carry: the server's (see the API's error table) or the client's. */
export type WarrenErrorCode = ErrorCode | ClientErrorCode;

export class WarrenApiError extends Error {
  /** The HTTP status, or 0 when none applies (network, an error inside a stream, a client-side wait). */
  readonly status: number;
  /** The server's stable code (`not_found`, `machine.not_empty`, ...), or the client's own (`network`, `timeout`, ...). */
  readonly code: WarrenErrorCode;

  constructor(status: number, code: WarrenErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WarrenApiError";
    this.status = status;
    this.code = code;
  }
}

export function isWarrenApiError(err: unknown): err is WarrenApiError {
  return err instanceof WarrenApiError;
}

/** `{"error": {"code", "message"}}` when `value` is the envelope, else null. */
export function envelopeOf(value: unknown): { code: WarrenErrorCode; message: string } | null {
  if (typeof value !== "object" || value === null || !("error" in value)) return null;
  const e = value.error;
  if (typeof e !== "object" || e === null) return null;
  const code = "code" in e ? e.code : undefined;
  const message = "message" in e ? e.message : undefined;
  if (typeof code !== "string" || code === "") return null;
  // The server's own code; a newer server may answer one this client does not list yet.
  return { code: code as ErrorCode, message: typeof message === "string" ? message : code };
}

/** The error for a non-2xx answer: the envelope's code and message, else `http.<status>` with what the body said. */
export function errorFromAnswer(status: number, statusText: string, body: string): WarrenApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const env = envelopeOf(parsed);
  if (env) return new WarrenApiError(status, env.code, env.message);
  const text = body.replace(/\s+/g, " ").trim().slice(0, 200);
  const reason = statusText || "the server answered without an error envelope";
  return new WarrenApiError(status, `http.${status}`, text ? `${reason}: ${text}` : reason);
}
