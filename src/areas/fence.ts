// A fence: the folders of a home that a person, or a conversation's turn, holds. `null` is no
// fence (the whole home); a list holds only those folders and what is below them. Pure: the
// file routes check paths with it, the door builds a turn's mounts from it.

/** The most folders one area names. */
export const MAX_AREA_FOLDERS = 64;

/** The fence of someone or something: null = the whole home, else only these folders. */
export type Fence = readonly string[] | null;

/**
 * A folder of an area, as stored: relative to the home, plain names joined by "/", with no
 * "." or ".." and no leading or trailing slash. Null (with the reason) when it is not one.
 */
export function folderProblem(raw: string): string | null {
  if (raw.includes("\0")) return "holds a NUL character";
  const trimmed = raw.replace(/^\/+|\/+$/g, "");
  if (raw.startsWith("/")) return "must be relative to the home (no leading /)";
  if (trimmed === "") return "names the home itself; an area names folders inside it";
  if (trimmed.length > 1024) return "is longer than 1024 characters";
  for (const part of trimmed.split("/"))
    if (part === "" || part === "." || part === "..") return "must be plain folder names joined by /";
  return null;
}

/** A folder as stored (trailing slashes dropped). */
export const normalFolder = (raw: string): string => raw.replace(/\/+$/g, "");

const within = (path: readonly string[], folder: readonly string[]): boolean =>
  folder.length <= path.length && folder.every((c, i) => path[i] === c);

/**
 * Where a path of the home (its components) stands against a fence: `inside` a held folder
 * (or no fence), `above` one (a folder on the way to a held folder: only that way shows), or
 * `outside`.
 */
export function standing(path: readonly string[], fence: Fence): "inside" | "above" | "outside" {
  if (fence === null) return "inside";
  let above = false;
  for (const f of fence) {
    const parts = f.split("/");
    if (within(path, parts)) return "inside";
    if (within(parts, path)) above = true;
  }
  return above ? "above" : "outside";
}

/** In a folder `above` held folders: the names of its entries on the way to one. */
export function namesOnTheWay(folder: readonly string[], fence: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const f of fence) {
    const parts = f.split("/");
    if (parts.length > folder.length && within(parts, folder)) names.add(parts[folder.length] ?? "");
  }
  return names;
}

/** The folders of a fence, none within another (the outer one holds the inner). */
export function outermost(folders: Iterable<string>): string[] {
  const all = [...new Set(folders)].sort();
  return all.filter((f) => !all.some((g) => g !== f && within(f.split("/"), g.split("/"))));
}

/**
 * Two fences together (a conversation's starter's and its persona's): what both hold, never
 * more than either. null is the whole home.
 */
export function narrow(a: Fence, b: Fence): Fence {
  if (a === null) return b === null ? null : outermost(b);
  if (b === null) return outermost(a);
  const out: string[] = [];
  for (const x of a)
    for (const y of b) {
      const xs = x.split("/");
      const ys = y.split("/");
      if (within(xs, ys)) out.push(x);
      else if (within(ys, xs)) out.push(y);
    }
  return outermost(out);
}
