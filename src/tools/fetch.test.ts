import assert from "node:assert/strict";
import type { Duplex } from "node:stream";
import { test } from "node:test";
import { addressRefusedIn } from "../net/connector.js";
import { getOnce, type EgressRoute } from "./fetch.js";
import { ToolFailure } from "./impl.js";

/** A proxy that refuses every request with this reason, as the egress proxy does (marking the address rule's). */
function refusing(reason: string, address = false): EgressRoute {
  return {
    who: { machineId: "mch_x", agentId: "agt_x", uid: 10000 },
    handler(stream: Duplex) {
      stream.once("data", () => {
        const body = `warren egress: refused: ${reason}\n`;
        stream.end(
          `HTTP/1.1 403 Forbidden\r\nX-Warren-Egress: refused\r\n${address ? "X-Warren-Egress-Rule: address\r\n" : ""}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
    },
  };
}

test("web_fetch: the proxy's refusal of an address is tool.address_refused, of the policy a plain failure", async () => {
  const signal = new AbortController().signal;
  const url = new URL("http://169.254.169.254/latest/meta-data/");
  const addr = await getOnce(
    url,
    1024,
    signal,
    refusing("169.254.169.254:80 is a link-local (metadata) address", true),
  ).catch((e: unknown) => e);
  assert.equal(addressRefusedIn(addr)?.code, "tool.address_refused", String(addr));
  const policy = await getOnce(url, 1024, signal, refusing("169.254.169.254 is not in the allow-list")).catch(
    (e: unknown) => e,
  );
  assert.ok(policy instanceof ToolFailure && !addressRefusedIn(policy), String(policy));
  assert.match(policy.message, /^the network policy refused it: /);
});
