// Home paths, lexically: what a caller may name, before anything touches the disk.

import { WarrenError } from "../errors.js";

function invalid(message: string): WarrenError {
  return new WarrenError("file.invalid_path", message);
}

/**
 * Splits a path given for an agent's home into its components, relative to the home.
 *
 * Accepted: `/home/<agent id>/...` or a path relative to the home. `.` and empty components are
 * dropped and `..` removes the previous component, lexically (links are the business of the
 * read and write rules). Refused with file.invalid_path: an empty path, a NUL, an absolute path
 * outside `/home/<agent id>`, a `..` that climbs above the home at any point (even if a later
 * component comes back), and a path that names the home itself rather than something in it.
 */
export function parseHomePath(agentId: string, path: string): string[] {
  if (agentId === "" || agentId === "." || agentId === ".." || /[/\0]/.test(agentId)) {
    throw new Error(`not an agent id: ${JSON.stringify(agentId)}`);
  }
  if (path === "")
    throw invalid("the path is empty; give /home/<agent id>/... or a path relative to the home");
  if (path.includes("\0")) throw invalid("the path holds a NUL character");

  let parts = path.split("/");
  if (path.startsWith("/")) {
    // ["", "home", "<agent id>", ...rest]; lexical steps before the home are not accepted.
    if (parts[1] !== "home" || parts[2] !== agentId) {
      throw invalid(`an absolute path must be inside /home/${agentId}`);
    }
    parts = parts.slice(3);
  }

  const out: string[] = [];
  for (const part of parts) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.pop() === undefined) throw invalid(`the path leaves /home/${agentId}`);
      continue;
    }
    out.push(part);
  }
  if (out.length === 0) throw invalid(`the path names /home/${agentId} itself; name a file inside it`);
  return out;
}

/** Checks components given directly (not from parseHomePath): each a plain name. */
export function checkComponents(components: readonly string[]): void {
  if (components.length === 0) throw invalid("no path was given; name a file inside the home");
  for (const c of components) {
    if (c === "" || c === "." || c === ".." || c.includes("/") || c.includes("\0")) {
      throw invalid(`${JSON.stringify(c)} is not a plain name; use parseHomePath for paths`);
    }
  }
}

/** How a path is shown in messages: relative to the home, never the host's path. */
export function showPath(components: readonly string[]): string {
  return components.join("/");
}
