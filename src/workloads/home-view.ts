// The view of the home that one unit of work has (a conversation's turn): the one place it is
// built, for its commands (boxd's fence: a mount namespace of their own, on every provider)
// and for its file tools (read on the host), so that both find the same files.
// - fence: the folders it holds (null: the whole home). A fenced turn finds no history: every
//   .git folder in what it holds is an empty folder to its commands, and its file tools refuse
//   any path through a `.git`.
// - place: a conversation's worktree (`from`) is where its repository is (`at`): its commands
//   and its file tools find the worktree at the repository's folder, never the repository's own
//   working tree (the base checkout is not there to read or write).
// - hide: folders its commands find empty (and its file tools refuse).
import { standing, type Fence } from "../areas/fence.js";

export interface HomeView {
  fence: Fence;
  /** Where its commands run when they name no folder (relative to the home). */
  cwd?: string | undefined;
  hide: readonly string[];
  /** A conversation's worktree (from) seen at its repository's folder (at), both relative to the home. */
  place?: { from: string; at: string } | undefined;
}

const within = (path: readonly string[], folder: readonly string[]): boolean =>
  folder.length <= path.length && folder.every((c, i) => path[i] === c);

/** The folders a view's file tools hold: its fence, and the repository's folder its worktree is at. */
export function heldBy(view: HomeView): Fence {
  if (view.fence === null || !view.place) return view.fence;
  const at = view.place.at;
  return standing(at.split("/"), view.fence) === "inside" ? view.fence : [...view.fence, at];
}

/**
 * Where a path of the home (its components) is on the host for the view's file tools: below
 * the placed repository's folder, in the worktree; null when its commands find nothing there
 * (a .git of a fenced view, a hidden folder). The fence itself is checked by the caller.
 */
export function onDisk(view: HomeView, components: readonly string[]): string[] | null {
  if (view.fence !== null && components.includes(".git")) return null;
  if (view.hide.some((h) => within(components, h.split("/")))) return null;
  const at = view.place?.at.split("/");
  if (view.place && at && within(components, at))
    return [...view.place.from.split("/"), ...components.slice(at.length)];
  return [...components];
}

/** The view as boxd takes it (exec.fence); nothing when its commands see the whole home as it is. */
export function boxdFence(
  home: string,
  view: HomeView,
): { home: string; keep?: string[]; hide?: string[]; place?: { from: string; at: string } } | undefined {
  const { fence, hide, place } = view;
  if (fence === null && hide.length === 0 && !place) return undefined;
  return {
    home,
    ...(fence !== null ? { keep: [...fence] } : {}),
    ...(hide.length > 0 ? { hide: [...hide] } : {}),
    ...(place ? { place: { from: place.from, at: place.at } } : {}),
  };
}
