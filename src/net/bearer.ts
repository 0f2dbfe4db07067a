// A connection's bearer token, added on the server's side of the guarded connector: a tool
// that names a connection fetches through this, and the token is put in the request's
// Authorization header here, in one place, at each call (so a refreshed token is used at
// once). The token is never in the tool's spec, its arguments or its answer (`sent` lists
// every token this fetch sent, for the caller's redactor); the connector drops the header on a
// redirect to another origin.
import type { GuardedFetch } from "./connector.js";

interface BearerFetch {
  fetch: GuardedFetch;
  /** Every token this fetch has sent. */
  sent: ReadonlySet<string>;
}

export function withBearer(fetch: GuardedFetch, token: () => Promise<string>): BearerFetch {
  const sent = new Set<string>();
  return {
    fetch: async (input, init) => {
      const value = await token();
      sent.add(value);
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      headers.set("authorization", `Bearer ${value}`);
      return fetch(input, { ...init, headers });
    },
    sent,
  };
}
