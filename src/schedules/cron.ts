// Five-field cron expressions (minute hour day-of-month month day-of-week) read in a time
// zone: `*`, `a`, `a-b`, `*/n`, `a-b/n`, `a/n`, lists with commas, month and weekday names,
// 7 as Sunday, and the @hourly, @daily (@midnight), @weekly, @monthly, @yearly (@annually)
// shorthands. When both day fields are restricted, a day matching either fires (as cron
// always did). A wall-clock time that a daylight-saving jump skips fires at the same wall
// minute's instant after the jump; a repeated one fires once.

export interface Cron {
  minute: ReadonlySet<number>;
  hour: ReadonlySet<number>;
  day: ReadonlySet<number>;
  month: ReadonlySet<number>;
  weekday: ReadonlySet<number>;
  /** Whether the day-of-month and day-of-week fields are restricted (not `*`). */
  dayRestricted: boolean;
  weekdayRestricted: boolean;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const SHORTHANDS: Record<string, string> = {
  "@hourly": "0 * * * *",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@weekly": "0 0 * * 0",
  "@monthly": "0 0 1 * *",
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
};

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** The first name's number (months start at 1, weekdays at 0). */
  nameBase?: number;
}

const FIELDS: FieldSpec[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS, nameBase: 1 },
  { name: "day of week", min: 0, max: 7, names: DAYS, nameBase: 0 },
];

function value(text: string, f: FieldSpec): number {
  const lower = text.toLowerCase();
  const i = f.names?.indexOf(lower) ?? -1;
  if (i >= 0) return i + (f.nameBase ?? 0);
  if (!/^\d{1,2}$/.test(text)) throw new Error(`${f.name}: "${text}" is not a number`);
  const n = Number(text);
  if (n < f.min || n > f.max) throw new Error(`${f.name}: ${n} is outside ${f.min}-${f.max}`);
  return n;
}

function field(text: string, f: FieldSpec): { set: Set<number>; star: boolean } {
  const set = new Set<number>();
  let star = false;
  for (const part of text.split(",")) {
    if (part === "") throw new Error(`${f.name}: an empty list item`);
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined || range === undefined) throw new Error(`${f.name}: "${part}" has two steps`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d{1,2}$/.test(stepText) || Number(stepText) < 1)
        throw new Error(`${f.name}: the step "${stepText}" must be a whole number from 1`);
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (range === "*") {
      [lo, hi] = [f.min, f.max];
      if (stepText === undefined) star = true;
    } else if (range.includes("-")) {
      const [a, b, more] = range.split("-");
      if (a === undefined || b === undefined || more !== undefined)
        throw new Error(`${f.name}: "${range}" is not a range`);
      [lo, hi] = [value(a, f), value(b, f)];
      if (lo > hi) throw new Error(`${f.name}: the range "${range}" runs backwards`);
    } else {
      lo = value(range, f);
      // `a/n` runs from a to the field's end
      hi = stepText === undefined ? lo : f.max;
    }
    for (let n = lo; n <= hi; n += step) set.add(n);
  }
  return { set, star };
}

/** Reads a cron expression; throws an Error whose message names what is wrong. */
export function parseCron(text: string): Cron {
  const expr = SHORTHANDS[text.trim().toLowerCase()] ?? text.trim();
  const parts = expr.split(/\s+/);
  if (parts.length !== 5)
    throw new Error(
      `a cron expression has 5 fields (minute hour day-of-month month day-of-week), not ${parts.length}`,
    );
  const [minute, hour, day, month, weekday] = parts.map((p, i) => field(p, FIELDS[i]!)) as [
    ReturnType<typeof field>,
    ReturnType<typeof field>,
    ReturnType<typeof field>,
    ReturnType<typeof field>,
    ReturnType<typeof field>,
  ];
  // 7 is Sunday too
  if (weekday.set.delete(7)) weekday.set.add(0);
  return {
    minute: minute.set,
    hour: hour.set,
    day: day.set,
    month: month.set,
    weekday: weekday.set,
    dayRestricted: !day.star,
    weekdayRestricted: !weekday.star,
  };
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** Whether the time zone is one this runtime knows (an IANA name such as Europe/Paris, or UTC). */
export function isTimeZone(tz: string): boolean {
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formats.set(tz, f);
  }
  return f;
}

/** The wall-clock time at instant `ms` in `tz`, as milliseconds of a UTC date with those fields. */
function wallOf(ms: number, tz: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(tz).formatToParts(new Date(ms)))
    if (part.type !== "literal") p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day, p.hour, p.minute, p.second) + (ms % 1000);
}

/** The instant whose wall-clock time in `tz` is `wall` (for a skipped wall time, the one after the jump). */
function instantOf(wall: number, tz: string): number {
  const guess = wall - (wallOf(wall, tz) - wall);
  const second = wall - (wallOf(guess, tz) - guess);
  return Math.max(guess, second);
}

function dayMatches(c: Cron, d: Date): boolean {
  const dom = c.day.has(d.getUTCDate());
  const dow = c.weekday.has(d.getUTCDay());
  if (c.dayRestricted && c.weekdayRestricted) return dom || dow;
  return dom && dow;
}

/** The first wall-clock minute at or after `wall` (a UTC-date-shaped time) that matches, or null within 8 years. */
function nextWall(c: Cron, wall: number): number | null {
  const d = new Date(wall);
  const limit = d.getUTCFullYear() + 8;
  while (d.getUTCFullYear() <= limit) {
    if (!c.month.has(d.getUTCMonth() + 1)) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(c, d)) {
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!c.hour.has(d.getUTCHours())) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0, 0);
    } else if (!c.minute.has(d.getUTCMinutes())) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0, 0);
    } else {
      return d.getTime();
    }
  }
  return null;
}

/** The first instant strictly after `after` at which the expression fires in `tz`; null if never (31 February). */
export function nextCron(c: Cron, after: Date, tz: string): Date | null {
  const minute = 60_000;
  let from = Math.floor(after.getTime() / minute) * minute + minute;
  // a repeated wall hour (clocks set back) can map a match before `after`: go on past it
  for (let i = 0; i < 1000; i++) {
    const wall = nextWall(c, wallOf(from, tz) - (wallOf(from, tz) % minute));
    if (wall === null) return null;
    const at = instantOf(wall, tz);
    if (at > after.getTime()) return new Date(at);
    from = Math.max(from + minute, at + minute);
  }
  return null;
}
