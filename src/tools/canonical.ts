// The canonical forms of the tool arguments a policy can test. A call's arguments are put in
// these forms before the tool policy sees them, and the tool then acts on exactly what was
// decided, so a policy cannot be beaten by spelling a path or a URL differently. A value that
// has no canonical form (a path that leaves the home, a URL that is not http) is refused
// before the policy, as the tool's answer.
import { WarrenError } from "../errors.js";
import { parseHomePath } from "../homes/paths.js";
import { ToolFailure } from "./impl.js";

/** Puts one argument's value in its canonical form; undefined when it stays absent. Throws ToolFailure. */
export type Canonicaliser = (value: unknown, name: string) => string | undefined;

function text(value: unknown, name: string): string {
  if (value === undefined || value === null) throw new ToolFailure(`the argument "${name}" is required`);
  if (typeof value !== "string") throw new ToolFailure(`the argument "${name}" must be a string`);
  return value;
}

function homeComponents(agentId: string, raw: string): string[] {
  try {
    return parseHomePath(agentId, raw);
  } catch (err) {
    if (err instanceof WarrenError) throw new ToolFailure(err.message);
    throw err;
  }
}

/**
 * A file of the home: relative to the home, `.`, `..` and repeated slashes resolved, the
 * home's absolute prefix `/home/<agent id>/` removed (`./a//b/../c` and `/home/<id>/a/c` are
 * both `a/c`). Refused: a path that leaves the home at any point, another absolute path, a NUL,
 * the home itself.
 */
export const homeFile =
  (agentId: string): Canonicaliser =>
  (value, name) =>
    homeComponents(agentId, text(value, name)).join("/");

/**
 * A folder of the home: as homeFile, and the home itself (no path, `.`, `/home/<agent id>`,
 * `notes/..`) is `.`.
 */
export const homeFolder =
  (agentId: string): Canonicaliser =>
  (value, name) => {
    if (value === undefined || value === null) return ".";
    const raw = text(value, name);
    if (raw === "") return ".";
    // resolved with one more component, then without it: `notes/..` is the home, not an error
    const parts = homeComponents(agentId, `${raw}/x`).slice(0, -1);
    return parts.length === 0 ? "." : parts.join("/");
  };

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * Percent-encoding in one form: an encoded unreserved character (`%41`, `%7e`) decoded, every
 * other escape in upper case (`%2f` is `%2F`).
 */
export function normalisePercent(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : `%${hex.toUpperCase()}`;
  });
}

/**
 * An http or https URL: scheme and host in lower case (a host's trailing dot dropped, numeric
 * IPv4 spellings written as four decimals), the default port dropped, dot segments resolved,
 * percent-encoding normalised (normalisePercent), the fragment dropped (it is never sent).
 */
export const httpUrl: Canonicaliser = (value, name) => {
  const raw = text(value, name);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ToolFailure(`the argument "${name}" is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ToolFailure(`only http and https URLs can be fetched, not ${url.protocol}`);
  if (url.hostname.endsWith(".")) url.hostname = url.hostname.replace(/\.+$/, "");
  if (url.hostname === "") throw new ToolFailure(`the argument "${name}" has no host`);
  url.hash = "";
  url.pathname = normalisePercent(url.pathname);
  if (url.search !== "") url.search = normalisePercent(url.search);
  return url.href;
};

/** An HTTP method, in upper case. */
export const httpMethod: Canonicaliser = (value, name) => text(value, name).toUpperCase();

/**
 * A path under an http tool's base URL, as `underBase` resolves it: relative to the base's
 * path (no leading slash), dot segments resolved, percent-encoding normalised, a query given
 * in the path kept after `?`. Refused: a path that leaves the base, a full URL.
 */
export const pathUnder =
  (base: URL, resolve: (base: URL, path: string) => URL): Canonicaliser =>
  (value, name) => {
    const raw = text(value, name);
    const url = resolve(base, raw);
    const basePath = base.pathname.endsWith("/") ? base.pathname : `${base.pathname}/`;
    const full = normalisePercent(url.pathname);
    let rel = full.length > basePath.length ? full.slice(basePath.length) : "";
    // a first segment with a colon would read as a URL scheme
    if (/^[^/]*:/.test(rel)) rel = `./${rel}`;
    const q = raw.indexOf("?");
    return q < 0 ? rel : `${rel}${normalisePercent(url.search) || "?"}`;
  };
