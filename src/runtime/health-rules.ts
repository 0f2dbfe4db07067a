// The pure rules of box health (src/runtime/health.ts applies them to each sample): how
// close to the pids limit counts as at it, when the box leaves it, when a tree climbing
// toward it is a runaway, and which limit a sample shows the box at.
import type { UsageSample } from "../boxes/index.js";

export type LimitName = "pids" | "memory";

/** The OOM kills of one command tree within runaway_after_s that make it a runaway. */
export const OOM_KILLS_RUNAWAY = 3;

/** How long a box must stay calm (well below the limit, no fork refused) to be off it. */
export const CALM_MS = 3000;

/** How close to the agents' pids limit counts as at it: max(8, 1 % of the limit). */
export function pidsMargin(limit: number): number {
  return Math.max(8, Math.ceil(limit / 100));
}

/** Below this count the box is well below its pids limit (what lets at_limit clear). */
export function pidsLowWater(limit: number): number {
  return limit - Math.max(4 * pidsMargin(limit), Math.ceil(limit / 10));
}

/** The processes a tree must hold to be blamed for the box's pids limit. */
export function pidsShare(limit: number): number {
  return Math.max(pidsMargin(limit), Math.ceil(limit / 10));
}

/** The box at a limit: which, since when, and since when it has been calm (if it is). */
export interface Pressure {
  limit: LimitName;
  since: number;
  calmSince?: number | undefined;
}

/**
 * The box's pressure after a sample: `hot` is the limit the sample shows it at (or null).
 * A new limit starts the clock; the same one keeps it; leaving it takes CALM_MS of calm
 * (for pids: the count below pidsLowWater, no fork refused), so a wobble keeps the clock.
 */
export function nextPressure(
  prev: Pressure | undefined,
  hot: LimitName | null,
  agents: UsageSample,
  now: number,
): Pressure | undefined {
  if (hot) return prev?.limit === hot ? { limit: hot, since: prev.since } : { limit: hot, since: now };
  if (!prev) return undefined;
  const calm =
    prev.limit !== "pids" || agents.pidsLimit === null || agents.pids < pidsLowWater(agents.pidsLimit);
  if (!calm) return { limit: prev.limit, since: prev.since };
  const calmSince = prev.calmSince ?? now;
  if (now - calmSince >= CALM_MS) return undefined;
  return { limit: prev.limit, since: prev.since, calmSince };
}

/**
 * One command tree holding a share of the box's pids limit (pidsShare): since when, the
 * fewest processes it held since then, and since when it has been back below half that
 * share (the episode ends after CALM_MS of it).
 */
export interface ClimbWatch {
  since: number;
  low: number;
  calmSince?: number | undefined;
}

/**
 * A tree's climb after a sample of `pids` processes, given the pids limit `limit` (null:
 * none): it starts at a share of the limit, keeps its start while the tree stays above
 * half that share, and ends once it has stayed below for CALM_MS.
 */
export function nextClimb(
  prev: ClimbWatch | undefined,
  pids: number,
  limit: number,
  now: number,
): ClimbWatch | undefined {
  const share = pidsShare(limit);
  if (pids >= share)
    return prev ? { since: prev.since, low: Math.min(prev.low, pids) } : { since: now, low: pids };
  if (!prev) return undefined;
  if (pids >= share / 2) return { since: prev.since, low: Math.min(prev.low, pids) };
  const calmSince = prev.calmSince ?? now;
  return now - calmSince >= CALM_MS ? undefined : { ...prev, calmSince };
}

/**
 * Whether a climbing tree is a runaway: it has held a share of the limit for the whole
 * window (not calming down) and meanwhile either doubled from its lowest count (still
 * growing toward the limit: a bomb, however slowly its forks come on a loaded host) or
 * brought the box to its pids limit. A steady pool (a server's threads) is neither.
 */
export function climbRunaway(
  c: ClimbWatch,
  pids: number,
  limit: number,
  boxAtPids: boolean,
  windowMs: number,
  now: number,
): boolean {
  if (c.calmSince !== undefined || now - c.since < windowMs || pids < pidsShare(limit)) return false;
  return boxAtPids || pids >= 2 * c.low;
}

/**
 * Which limit the agents' cgroup is at in this sample, given the one before: `forks` is
 * the forks refused since then in the commands' cgroups (the agents' own counter is read
 * here), `oomDelta` the OOM kills.
 */
export function limitHeld(
  now: UsageSample,
  before: UsageSample | undefined,
  oomDelta: number,
  forks = 0,
): LimitName | null {
  if (now.pidsLimit !== null) {
    const hits = forks > 0 || (before !== undefined && now.pidsLimitHits > before.pidsLimitHits);
    if (now.pids >= now.pidsLimit - pidsMargin(now.pidsLimit) || hits) return "pids";
  }
  if (now.memoryLimitBytes !== null) {
    if (oomDelta > 0) return "memory";
    // page cache is reclaimed at the limit (and counts as a hit on cgroup v1): only memory
    // that cannot be reclaimed (anonymous, tmpfs) near the limit is holding it
    const near = now.unreclaimableBytes >= now.memoryLimitBytes * 0.9;
    const hits = before !== undefined && now.memoryLimitHits > before.memoryLimitHits;
    if (near && hits) return "memory";
  }
  return null;
}
