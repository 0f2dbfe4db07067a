// The stable error codes of the API and the HTTP status of each: one table, read by the
// server's error handler and the document, and a typed union for the SDK.

export const errorStatus = {
  "request.invalid": 400,
  "egress.forbidden": 400,
  "auth.required": 401,
  "access.denied": 403,
  "origin.refused": 403,
  "area.refused": 403,
  "area.not_allowed": 400,
  "area.in_use": 409,
  "branch.conflict": 409,
  not_found: 404,
  "method.not_allowed": 405,
  "generation.busy": 409,
  "machine.not_empty": 409,
  "machine.busy": 409,
  "secret.limit": 409,
  "run.not_cancellable": 409,
  "conversation.closed": 409,
  "version.gate": 409,
  "approval.stale": 409,
  "workspace.class_unknown": 409,
  "flow.instance_ended": 409,
  "file.invalid_path": 400,
  "file.link": 400,
  "file.not_regular": 400,
  "file.not_found": 404,
  "file.too_large": 413,
  "run.input_too_large": 413,
  "request.too_large": 413,
  "run.org_limit": 429,
  unsupported_media_type: 415,
  "host.refused": 421,
  "workspace.full": 507,
  "workspace.measure": 500,
  "port.unreachable": 502,
  "box.unavailable": 503,
  internal: 500,
} as const;

/** A code the server answers with, in `{"error": {"code", "message"}}`. */
export type ErrorCode = keyof typeof errorStatus;
