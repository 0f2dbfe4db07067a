// One root error class with a stable code; one table from codes to HTTP statuses.
// The HTTP layer turns any WarrenError into {"error": {"code", "message"}} in one place.

export const errorStatus = {
  "request.invalid": 400,
  "auth.required": 401,
  "access.denied": 403,
  "origin.refused": 403,
  not_found: 404,
  "method.not_allowed": 405,
  "generation.busy": 409,
  "machine.not_empty": 409,
  "secret.limit": 409,
  "run.not_cancellable": 409,
  "file.invalid_path": 400,
  "file.link": 400,
  "file.not_regular": 400,
  "file.not_found": 404,
  "file.too_large": 413,
  "run.input_too_large": 413,
  "request.too_large": 413,
  unsupported_media_type: 415,
  "host.refused": 421,
  "workspace.full": 507,
  "workspace.measure": 500,
  "port.unreachable": 502,
  "box.unavailable": 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof errorStatus;

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
