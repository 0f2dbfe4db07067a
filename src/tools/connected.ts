// An http or MCP tool that names a connection: it fetches through the connector with the
// connection's bearer token added on the server's side (net/bearer.ts), and its answers are
// redacted of that token too. A connection that cannot be used (not granted, revoked,
// expired) fails the call with the reason, never a token.
import type { ToolSpec } from "../contract/spec.js";
import { WarrenError } from "../errors.js";
import { withBearer } from "../net/bearer.js";
import type { GuardedFetch } from "../net/connector.js";
import { Redactor } from "../secrets/redact.js";
import { ToolFailure } from "./impl.js";

/** The connections' side the tools use: an agent's access token of a connection, fresh. */
export interface ConnectionTokens {
  tokenFor(agent: { id: string; orgId: string }, name: string): Promise<string>;
}

interface Via {
  fetch: GuardedFetch;
  secrets: { redactor: Pick<Redactor, "redactText"> };
}

export function viaConnection(
  spec: Exclude<ToolSpec, { type: "builtin" }>,
  agent: { id: string; orgId: string },
  via: Via,
  connections: ConnectionTokens | undefined,
): Via {
  const name = spec.connection;
  if (name === undefined) return via;
  const token = async () => {
    if (!connections) throw new ToolFailure(`the connection ${name} cannot be used: connections are off`);
    try {
      return await connections.tokenFor(agent, name);
    } catch (err) {
      if (err instanceof WarrenError && err.code === "connection.unusable")
        throw new ToolFailure(err.message);
      throw err;
    }
  };
  const b = withBearer(via.fetch, token);
  // the tokens sent so far, hidden from every answer (a refresh adds one)
  let hidden = Redactor.empty;
  let count = 0;
  const redactText = (t: string) => {
    if (b.sent.size !== count) {
      count = b.sent.size;
      hidden = new Redactor([...b.sent]);
    }
    return hidden.redactText(via.secrets.redactor.redactText(t));
  };
  return { fetch: b.fetch, secrets: { redactor: { redactText } } };
}
