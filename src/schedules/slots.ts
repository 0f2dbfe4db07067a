// A schedule's slots: the instants it is due at, by cron in its time zone or every N
// seconds from its anchor (start_at, else its creation), within start_at and end_at.
import { nextCron, parseCron, type Cron } from "./cron.js";

export interface Timing {
  cron: Cron | null;
  everyMs: number | null;
  timezone: string;
  /** Where an every_s schedule counts from. */
  anchor: number;
  startAt: number | null;
  endAt: number | null;
}

export function timingOf(s: {
  cron: string | null;
  everyS: number | null;
  timezone: string;
  startAt: Date | null;
  endAt: Date | null;
  createdAt: Date;
}): Timing {
  return {
    cron: s.cron === null ? null : parseCron(s.cron),
    everyMs: s.everyS === null ? null : s.everyS * 1000,
    timezone: s.timezone,
    anchor: (s.startAt ?? s.createdAt).getTime(),
    startAt: s.startAt?.getTime() ?? null,
    endAt: s.endAt?.getTime() ?? null,
  };
}

/** The first slot strictly after `after`; null when there is none (past end_at, a date that never comes). */
export function nextSlot(t: Timing, after: number): number | null {
  // start_at itself is a slot
  const from = t.startAt !== null && after < t.startAt ? t.startAt - 1 : after;
  let slot: number | null;
  if (t.everyMs !== null) {
    slot =
      from < t.anchor ? t.anchor : t.anchor + (Math.floor((from - t.anchor) / t.everyMs) + 1) * t.everyMs;
  } else if (t.cron !== null) {
    slot = nextCron(t.cron, new Date(from), t.timezone)?.getTime() ?? null;
  } else {
    slot = null;
  }
  if (slot === null || (t.endAt !== null && slot > t.endAt)) return null;
  return slot;
}

/** The latest slot at or before `now` (and end_at), given a slot `first` at or before it. */
export function latestSlot(t: Timing, first: number, now: number): number {
  const until = t.endAt === null ? now : Math.min(now, t.endAt);
  if (until <= first) return first;
  if (t.everyMs !== null)
    return Math.max(first, t.anchor + Math.floor((until - t.anchor) / t.everyMs) * t.everyMs);
  // a long stop of a minutely cron is at most a few hundred thousand steps; past that, the
  // latest of them is near enough
  let last = first;
  for (let i = 0, s = nextSlot(t, first); s !== null && s <= until && i < 200_000; i++, s = nextSlot(t, s))
    last = s;
  return last;
}
