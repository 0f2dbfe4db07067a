// One root error class with a stable code; one table from codes to HTTP statuses.
// The HTTP layer turns any WarrenError into {"error": {"code", "message"}} in one place.

import { errorStatus, type ErrorCode } from "./contract/errors.js";

export class WarrenError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    super(message, options);
    this.name = "WarrenError";
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

export function isWarrenError(err: unknown): err is WarrenError {
  return err instanceof WarrenError;
}

export const notFound = (what: string): WarrenError => new WarrenError("not_found", `${what} was not found`);
