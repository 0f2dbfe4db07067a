// @ts-check
// A warren extension (docs/extensions.md): the identity mode `header-signature`. A front
// that authenticates people (a gateway, a job runner) sends, on every request:
//   x-warren-user:       the person's email
//   x-warren-timestamp:  the time of signing, in seconds since the epoch
//   x-warren-signature:  hex HMAC-SHA256 of "<email>\n<timestamp>" under the shared key
// warren believes the email when the signature holds and the time is within
// WARREN_HEADER_SIGNATURE_SKEW_S (default 300) of its own. The key: WARREN_HEADER_SIGNATURE_KEY
// (at least 32 characters). Use it with AUTH_MODE=header-signature and
// WARREN_EXTENSIONS=<this folder>/index.js.
import { createHmac, timingSafeEqual } from "node:crypto";

/** @typedef {import("../../src/compose/extensions.js").ExtensionHost} ExtensionHost */

/** The signature a front sends for `email` at `timestamp` (seconds). */
export function sign(key, email, timestamp) {
  return createHmac("sha256", key).update(`${email}\n${timestamp}`).digest("hex");
}

/** @param {import("node:http").IncomingHttpHeaders} headers @param {string} name */
function one(headers, name) {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** @param {ExtensionHost} host */
export function register(host) {
  host.identityMode({
    name: "header-signature",
    description: "the email in x-warren-user, signed with HMAC-SHA256 under WARREN_HEADER_SIGNATURE_KEY",
    create({ env, refuse }) {
      const key = env.WARREN_HEADER_SIGNATURE_KEY ?? "";
      if (key.length < 32)
        throw new Error(
          "AUTH_MODE=header-signature needs WARREN_HEADER_SIGNATURE_KEY, a shared key of at least 32 characters (e.g. `openssl rand -hex 32`)",
        );
      const skew = Number(env.WARREN_HEADER_SIGNATURE_SKEW_S ?? "300");
      if (!Number.isInteger(skew) || skew < 1)
        throw new Error("WARREN_HEADER_SIGNATURE_SKEW_S must be a whole number of seconds above 0");
      return {
        identify(req) {
          const email = one(req.headers, "x-warren-user");
          const at = one(req.headers, "x-warren-timestamp");
          const signature = one(req.headers, "x-warren-signature");
          if (!email || !at || !signature)
            return refuse("sign in: x-warren-user, x-warren-timestamp and x-warren-signature are required");
          if (!/^\d{1,12}$/.test(at) || Math.abs(Date.now() / 1000 - Number(at)) > skew)
            return refuse(`sign in: x-warren-timestamp is not within ${skew} s of this server's clock`);
          const want = Buffer.from(sign(key, email, at), "hex");
          const got = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, "hex") : Buffer.alloc(0);
          if (got.length !== want.length || !timingSafeEqual(got, want))
            return refuse("sign in: x-warren-signature does not hold for x-warren-user");
          return email;
        },
      };
    },
  });
}
