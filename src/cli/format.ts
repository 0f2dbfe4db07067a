// What people read: aligned tables and field lists. Pure functions from answers to text.
import type {
  Agent,
  ExecExitEvent,
  Guild,
  Machine,
  Member,
  Org,
  Run,
  RunEvent,
  Usage,
} from "../sdk/index.js";

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/** One cell: `-` for nothing, lists joined by commas, objects as compact JSON, control characters escaped. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === "") return "-";
  if (Array.isArray(value)) return value.length === 0 ? "-" : value.map(cell).join(",");
  if (typeof value === "string") return visible(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return String(value);
  return visible(JSON.stringify(value) ?? "-");
}

/** Escapes what would break a line or move the cursor: newlines, tabs, escapes. */
export function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]/g, (c) => {
    switch (c) {
      case "\n":
        return "\\n";
      case "\t":
        return "\\t";
      case "\r":
        return "\\r";
      default:
        return `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
    }
  });
}

/** Columns padded to their widest cell, two spaces apart; no trailing spaces. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    headers
      .map((_, i) => (cells[i] ?? "").padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return `${[headers, ...rows].map(line).join("\n")}\n`;
}

/** A table of `items`, or `no <what>` when there are none. */
export function listView<T>(what: string, columns: readonly Column<T>[], items: readonly T[]): string {
  if (items.length === 0) return `no ${what}\n`;
  return formatTable(
    columns.map((c) => c.header),
    items.map((item) => columns.map((c) => cell(c.value(item)))),
  );
}

/** `a.b.c` paths to leaf values, in the object's order; lists stay whole. */
export function flatten(value: unknown, prefix = ""): [string, unknown][] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [[prefix, value]];
  const entries = Object.entries(value);
  if (entries.length === 0) return [[prefix, "-"]];
  return entries.flatMap(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k));
}

/** One object as aligned `field  value` lines. */
export function detailView(value: object, omit: readonly string[] = []): string {
  const pairs = flatten(value).filter(([k]) => !omit.includes(k.split(".")[0] ?? k));
  const width = Math.max(0, ...pairs.map(([k]) => k.length));
  return `${pairs.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`.trimEnd()).join("\n")}\n`;
}

/** `used / cap MiB`, with `-` before the first measurement. */
export function mib(used: number | null | undefined, max: number): string {
  return `${used ?? "-"}/${max} MiB`;
}

export const orgColumns: Column<Org>[] = [
  { header: "ID", value: (o) => o.id },
  { header: "NAME", value: (o) => o.name },
  { header: "ROLE", value: (o) => o.role },
];

export const memberColumns: Column<Member>[] = [
  { header: "USER", value: (m) => m.user_id },
  { header: "EMAIL", value: (m) => m.email },
  { header: "ROLE", value: (m) => m.role },
];

export const machineColumns: Column<Machine>[] = [
  { header: "ID", value: (m) => m.id },
  { header: "NAME", value: (m) => m.name },
  { header: "STATE", value: (m) => m.state },
  { header: "AGENTS", value: (m) => m.agents },
  { header: "DISK", value: (m) => mib(m.workspace_mib, m.max_workspace_mib) },
  { header: "MEMORY", value: (m) => `${m.memory_mib} MiB` },
  { header: "CPUS", value: (m) => m.cpus },
  { header: "TRUST", value: (m) => m.trust },
];

export const agentColumns: Column<Agent>[] = [
  { header: "ID", value: (a) => a.id },
  { header: "NAME", value: (a) => a.name },
  { header: "MACHINE", value: (a) => a.machine_id },
  { header: "SLOT", value: (a) => a.slot },
  { header: "PORTS", value: (a) => `${a.ports.first}-${a.ports.last}` },
  { header: "DISK", value: (a) => mib(a.workspace_mib, a.max_workspace_mib) },
];

export const guildColumns: Column<Guild>[] = [
  { header: "ID", value: (g) => g.id },
  { header: "NAME", value: (g) => g.name },
  { header: "ORG", value: (g) => g.org_id },
  { header: "AGENTS", value: (g) => g.agent_ids.length },
];

/** `text` cut to `max` characters, with an ellipsis when cut. */
export function short(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

export const runColumns: Column<Run>[] = [
  { header: "ID", value: (r) => r.id },
  { header: "STATUS", value: (r) => r.status },
  { header: "COMMAND", value: (r) => short(r.argv.join(" "), 40) },
  { header: "EXIT", value: (r) => r.exit_code },
  { header: "STARTED", value: (r) => r.started_at },
  { header: "ENDED", value: (r) => r.ended_at },
];

export const eventColumns: Column<RunEvent>[] = [
  { header: "AT", value: (e) => e.at },
  { header: "TYPE", value: (e) => e.type },
  { header: "DATA", value: (e) => e.data },
];

/** A run's fields, then what it printed (as is) after a blank line. */
export function runView(run: Run): string {
  const head = detailView(run, ["output"]);
  if (run.output === null || run.output === undefined || run.output === "") return head;
  const tail = run.output.endsWith("\n") ? "" : "\n";
  return `${head}\noutput${run.output_truncated ? " (truncated)" : ""}:\n${run.output}${tail}`;
}

export function usageView(u: Usage): string {
  return formatTable(
    ["", "USED", "NAME"],
    [
      ["agent", mib(u.workspace_mib, u.max_workspace_mib), ""],
      [
        "machine",
        mib(u.machine.workspace_mib, u.machine.max_workspace_mib),
        `${u.machine.name} (${u.machine.id})`,
      ],
    ],
  );
}

/** Signal numbers on Linux, for the shell's 128+n convention. */
const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGXCPU: 24,
  SIGXFSZ: 25,
};

/**
 * The exit code the CLI passes on for a command that ended: its own code; 124 when it timed
 * out (as timeout(1) does); 128+n when a signal ended it; 1 when nothing better is known.
 */
export function exitCodeOf(exit: Pick<ExecExitEvent, "exit_code" | "signal" | "timed_out">): number {
  if (exit.timed_out) return 124;
  if (exit.exit_code !== null) return Math.min(255, Math.max(0, exit.exit_code));
  const n =
    exit.signal === null
      ? undefined
      : SIGNALS[exit.signal.startsWith("SIG") ? exit.signal : `SIG${exit.signal}`];
  return n === undefined ? 1 : 128 + n;
}

/** A line for stderr when a command did not simply exit, else null. */
export function exitNote(
  exit: Pick<ExecExitEvent, "exit_code" | "signal" | "timed_out" | "duration_ms">,
): string | null {
  if (exit.timed_out) return `warren: the command timed out after ${exit.duration_ms} ms\n`;
  if (exit.exit_code === null && exit.signal !== null)
    return `warren: the command was ended by ${exit.signal}\n`;
  return null;
}
