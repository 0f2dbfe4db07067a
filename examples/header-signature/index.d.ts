// The types of index.js, for TypeScript callers (a front that signs, the tests).
import type { ExtensionHost } from "../../src/compose/extensions.js";

/** The signature a front sends for `email` at `timestamp` (seconds since the epoch). */
export function sign(key: string, email: string, timestamp: string | number): string;
/** Registers the identity mode `header-signature`. */
export function register(host: ExtensionHost): void;
