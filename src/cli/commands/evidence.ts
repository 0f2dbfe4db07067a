// `warren evidence verify PACK`: checks an evidence pack on this machine, with no server: every
// line's SHA-256 against the manifest, and each line's link to the one before it, so that a
// removed, added, reordered or edited line fails.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { gunzipSync } from "node:zlib";
import { defineCommand, defineGroup } from "../command.js";
import { EXIT_FAILED, EXIT_OK } from "../context.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

interface Line {
  type?: unknown;
  prev?: unknown;
  lines?: unknown;
  sha256?: unknown;
}

/** What is wrong with a pack's text, or an empty list when it holds. */
export function packProblems(text: string): string[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const manifestText = lines.pop();
  if (manifestText === undefined) return ["the pack is empty"];
  let manifest: Line;
  try {
    manifest = JSON.parse(manifestText) as Line;
  } catch {
    return ["the last line is not JSON (the manifest is missing or cut)"];
  }
  if (manifest.type !== "manifest" || !Array.isArray(manifest.sha256))
    return ["the last line is not a manifest"];
  const problems: string[] = [];
  if (manifest.lines !== lines.length || manifest.sha256.length !== lines.length)
    problems.push(`the manifest lists ${String(manifest.lines)} lines; the pack holds ${lines.length}`);
  let prev: string | null = null;
  for (const [i, line] of lines.entries()) {
    const digest = sha256(line);
    if (manifest.sha256[i] !== digest) problems.push(`line ${i + 1}: its SHA-256 is not the manifest's`);
    let parsed: Line;
    try {
      parsed = JSON.parse(line) as Line;
    } catch {
      problems.push(`line ${i + 1}: not JSON`);
      prev = digest;
      continue;
    }
    if (i === 0 && parsed.type !== "header") problems.push("line 1: not the pack's header");
    if (parsed.prev !== prev) problems.push(`line ${i + 1}: does not follow line ${i} (the chain is broken)`);
    prev = digest;
  }
  if (manifest.prev !== prev) problems.push("the manifest does not follow the last line");
  return problems;
}

export const evidence = defineGroup("evidence", "evidence packs: the governance record of a period", {
  verify: defineCommand({
    summary: "check an evidence pack (gzipped or not): exits 1 when a line was removed, added or changed",
    args: ["pack"],
    options: [
      { name: "sha256", value: "<hex>", help: "the digest the server answered when the pack was made" },
    ],
    parse: (i) => ({ file: i.arg("pack"), sha256: i.str("sha256")?.toLowerCase() }),
    run: async (ctx, p) => {
      const raw = await readFile(p.file);
      const problems: string[] = [];
      if (p.sha256 !== undefined && createHash("sha256").update(raw).digest("hex") !== p.sha256)
        problems.push("the file's SHA-256 is not the one given");
      let text: string;
      try {
        text = (raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString("utf8");
      } catch {
        text = "";
        problems.push("the file is not a readable gzip");
      }
      if (text !== "") problems.push(...packProblems(text));
      const ok = problems.length === 0;
      await ctx.show({ ok, problems }, () =>
        ok ? `${p.file}: verified\n` : `${p.file}: NOT verified\n${problems.map((x) => `  ${x}\n`).join("")}`,
      );
      return ok ? EXIT_OK : EXIT_FAILED;
    },
  }),
});
