// @ts-check
// A warren extension (docs/extensions.md): the box provider `local-audited`, which wraps the
// built-in `local` provider and writes one JSON line per lifecycle step of a box (create,
// start, stop, pause, resume, remove) to WARREN_AUDIT_LOG (default
// STATE_ROOT/run/provider-audit.jsonl). Its boxes are local boxes: it keeps the name `local`
// (the boxes' labels and their adoption after a restart are the wrapped provider's).
// Use it with WARREN_PROVIDER=local-audited and WARREN_EXTENSIONS=<this folder>/index.js.
import { appendFileSync } from "node:fs";
import path from "node:path";

/** @typedef {import("../../src/compose/extensions.js").ExtensionHost} ExtensionHost */
/** @typedef {import("../../src/boxes/index.js").BoxProvider} BoxProvider */

const AUDITED = new Set(["create", "start", "stop", "pause", "resume", "remove"]);

/** @param {ExtensionHost} host */
export function register(host) {
  host.boxProvider({
    name: "local-audited",
    description:
      "the local provider, each box's create, start, stop, pause, resume and remove written to WARREN_AUDIT_LOG",
    create(ctx) {
      const inner = ctx.provider("local");
      const file = ctx.env.WARREN_AUDIT_LOG || path.join(ctx.runRoot, "provider-audit.jsonl");
      /** @param {object} entry */
      const write = (entry) =>
        appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
      return /** @type {BoxProvider} */ (
        new Proxy(inner, {
          get(target, prop) {
            const value = Reflect.get(target, prop, target);
            if (typeof value !== "function") return value;
            if (typeof prop !== "string" || !AUDITED.has(prop)) return value.bind(target);
            return async (/** @type {any[]} */ ...args) => {
              const box = typeof args[0] === "string" ? args[0] : args[0]?.id;
              try {
                const out = await value.apply(target, args);
                write({ op: prop, box, ok: true });
                return out;
              } catch (err) {
                write({ op: prop, box, ok: false, error: String(err instanceof Error ? err.message : err) });
                throw err;
              }
            };
          },
        })
      );
    },
  });
}
