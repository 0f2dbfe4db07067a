// The API's contract: one zod schema per wire shape. The server validates requests and
// serialises answers with these, the OpenAPI document is generated from them, and the
// SDK's types are inferred from them (type-only: the SDK loads none of this at run time).
export * from "./common.js";
export * from "./errors.js";
export * from "./orgs.js";
export * from "./machines.js";
export * from "./policy.js";
export * from "./agents.js";
export * from "./exec.js";
export * from "./runs.js";
export * from "./homes.js";
