// The contracts folder (WARREN_CONTRACTS, default STATE_ROOT/contracts) read: one folder per
// flow holding its contract `flow.yaml` and the files it ships for its agents. Each contract is
// parsed as YAML, validated by the one schema (src/contract/flow-contract.ts), its bundles and
// classes looked up in policy.yaml and its files found; what does not hold is named with its
// file, line and reason. The revision of a flow is the content hash of its contract and files.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { isMap, LineCounter, parseDocument, type Document } from "yaml";
import { FlowContract } from "../contract/flow-contract.js";
import { loadPolicy, type Policy } from "../workspaces/policy.js";

/** The contract file of a flow's folder. */
export const CONTRACT_FILE = "flow.yaml";
/** The folder name an agent finds its own flow's folder at (/opt/warren/contracts/self): no flow's. */
export const SELF_FOLDER = "self";

/** Why a contract does not hold: its file (relative to the folder), line (1-based) and reason. */
export interface ContractProblem {
  file: string;
  line: number;
  reason: string;
}

export interface LoadedContract {
  /** The flow's folder's name. */
  folder: string;
  /** The contract file, relative to the contracts folder. */
  file: string;
  contract: FlowContract;
  /** `sha256:` and the first 16 hex digits of the hash of the contract and its files. */
  revision: string;
  /** The line of a path of the contract (for the problems found against the database). */
  lineOf: (at: (string | number)[]) => number;
}

export function problemText(p: ContractProblem): string {
  return `${p.file}:${p.line}: ${p.reason}`;
}

/** The 1-based line of the deepest node of `at` the document holds. */
function lineIn(doc: Document, lines: LineCounter, at: readonly PropertyKey[]): number {
  for (let n = at.length; n >= 0; n--) {
    const node: unknown = n === 0 ? doc.contents : doc.getIn(at.slice(0, n) as (string | number)[], true);
    const range = (node as { range?: [number, number, number] } | null)?.range;
    if (range) return lines.linePos(range[0]).line;
  }
  return 1;
}

/** The key node's line when the path ends at a key (an unknown key is named by its key). */
function keyLine(
  doc: Document,
  lines: LineCounter,
  parent: readonly PropertyKey[],
  key: string,
): number | null {
  const node: unknown = parent.length === 0 ? doc.contents : doc.getIn(parent as (string | number)[], true);
  if (!isMap(node)) return null;
  for (const pair of node.items) {
    const k = pair.key as { value?: unknown; range?: [number, number, number] } | null;
    if (k?.value === key && k.range) return lines.linePos(k.range[0]).line;
  }
  return null;
}

/** One contract's text checked: the contract, or its first problem. */
export function parseContract(
  text: string,
  file: string,
  policy: Policy | null,
):
  | { ok: true; contract: FlowContract; lineOf: LoadedContract["lineOf"] }
  | { ok: false; problem: ContractProblem } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const bad = doc.errors[0];
  if (bad) {
    const line = bad.linePos?.[0].line ?? lines.linePos(bad.pos[0]).line;
    return { ok: false, problem: { file, line, reason: `not YAML: ${bad.message.split("\n")[0]}` } };
  }
  const lineOf = (at: (string | number)[]) => lineIn(doc, lines, at);
  const r = FlowContract.safeParse(doc.toJS({ maxAliasCount: 100 }) ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    if (!issue) return { ok: false, problem: { file, line: 1, reason: "does not hold" } };
    const where = issue.path.map(String);
    let line = lineIn(doc, lines, issue.path);
    let named = where.join(".");
    if (issue.code === "unrecognized_keys" && issue.keys[0] !== undefined) {
      line = keyLine(doc, lines, issue.path, issue.keys[0]) ?? line;
      named = [...where, issue.keys[0]].join(".");
    }
    return { ok: false, problem: { file, line, reason: `${named || "(the contract)"}: ${issue.message}` } };
  }
  const c = r.data;
  if (policy) {
    const refused = (at: (string | number)[], reason: string) =>
      ({ ok: false, problem: { file, line: lineOf(at), reason: `${at.join(".")}: ${reason}` } }) as const;
    for (const [i, a] of c.agents.entries()) {
      if (!policy.bundles?.has(a.permission_bundle))
        return refused(
          ["agents", i, "permission_bundle"],
          `"${a.permission_bundle}" is not a bundle of the policy file's permission_bundles`,
        );
      if (a.workspace_class !== null && !policy.classes.has(a.workspace_class))
        return refused(
          ["agents", i, "workspace_class"],
          `"${a.workspace_class}" is not a class of the policy file's workspace_classes`,
        );
    }
  }
  return { ok: true, contract: c, lineOf };
}

/** A regular file of the folder, read without following a link; null when it is not one. */
function readRegular(file: string): Buffer | null {
  try {
    const st = fs.lstatSync(file);
    if (!st.isFile()) return null;
    return fs.readFileSync(file);
  } catch {
    return null;
  }
}

/**
 * Reads every flow's folder of `dir`: the contracts that hold, and the problems (the first
 * is the boot check's refusal). A folder that does not exist holds no contract.
 */
export function readContracts(
  dir: string,
  policy: Policy | null,
): { contracts: LoadedContract[]; problems: ContractProblem[] } {
  const contracts: LoadedContract[] = [];
  const problems: ContractProblem[] = [];
  let names: fs.Dirent[];
  try {
    names = fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { contracts, problems };
    return { contracts, problems: [{ file: dir, line: 0, reason: (err as Error).message }] };
  }
  const seen = new Map<string, string>();
  for (const d of names.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!d.isDirectory() || d.name.startsWith(".") || d.name === SELF_FOLDER) continue;
    const file = path.posix.join(d.name, CONTRACT_FILE);
    const bytes = readRegular(path.join(dir, d.name, CONTRACT_FILE));
    if (bytes === null) {
      problems.push({ file, line: 0, reason: `the flow's folder has no ${CONTRACT_FILE} (a regular file)` });
      continue;
    }
    const parsed = parseContract(bytes.toString("utf8"), file, policy);
    if (!parsed.ok) {
      problems.push(parsed.problem);
      continue;
    }
    const c = parsed.contract;
    const hash = createHash("sha256").update(bytes);
    let missing: ContractProblem | null = null;
    for (const [i, f] of [...c.files].sort().entries()) {
      const shipped = readRegular(path.join(dir, d.name, ...f.split("/")));
      if (shipped === null) {
        const at = c.files.indexOf(f);
        missing = {
          file,
          line: parsed.lineOf(["files", at]),
          reason: `files.${at}: ${f} is not a regular file of the flow's folder`,
        };
        break;
      }
      hash.update(`\0${i}\0${f}\0`).update(shipped);
    }
    if (missing) {
      problems.push(missing);
      continue;
    }
    const key = `${c.org}\0${c.name}`;
    const twin = seen.get(key);
    if (twin !== undefined) {
      problems.push({
        file,
        line: parsed.lineOf(["name"]),
        reason: `flow "${c.name}" of "${c.org}" is also ${twin}`,
      });
      continue;
    }
    seen.set(key, file);
    contracts.push({
      folder: d.name,
      file,
      contract: c,
      revision: `sha256:${hash.digest("hex").slice(0, 16)}`,
      lineOf: parsed.lineOf,
    });
  }
  return { contracts, problems };
}

/**
 * The boot check `contracts_loaded` (and `warren doctor`'s): every contract of the folder parses
 * and holds against the policy file; the first that does not is named with its file and line.
 */
export function contractsLoadedProbe(dir: string, policyFile: string) {
  return async (): Promise<{ ok: boolean; detail: string; fix: string }> => {
    let policy: Policy | null;
    try {
      policy = loadPolicy(policyFile, false);
    } catch {
      policy = null; // the policy check names what is wrong with it
    }
    const { contracts, problems } = readContracts(dir, policy);
    const first = problems[0];
    if (!first) return { ok: true, detail: `${contracts.length} flow contract(s) in ${dir}`, fix: "" };
    return {
      ok: false,
      detail: `the flow contract ${path.join(dir, first.file)} does not hold at line ${first.line}: ${first.reason}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ""}`,
      fix: `correct ${path.join(dir, first.file)} (the schema: docs/flow-contract.schema.json)`,
    };
  };
}
