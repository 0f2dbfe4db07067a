// The wire shapes of warren's HTTP API, snake_case as the server sends and accepts them.
// They are the server's own contract (src/contract), inferred from its schemas; this is a
// type-only import, so the SDK loads none of the server's code at run time.
export type * from "../contract/types.js";
