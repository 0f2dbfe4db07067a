// What people read: aligned tables and field lists. Pure functions from answers to text;
// each command module holds its own columns and views built from these.

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

/** `text` cut to `max` characters, with an ellipsis when cut. */
export function short(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}
