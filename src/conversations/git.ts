// The one door of every git command warren runs on a repository of a home (a conversation's
// worktree set-up, the commit of a turn's work, the diff, the land, the worktree's removal).
//
// git runs in the agent's box, as the agent, with none of its secrets, and never with anything
// the repository (that is, the agent, or a fenced turn) could have planted:
// - the `.git` it uses is named explicitly (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE), after the
//   host has checked, without following a link, that the repository's `.git` is a real folder
//   holding no link, no `commondir` and no alternates, and that a worktree's `.git` file names
//   exactly the folder warren made for it under that `.git/worktrees/`; anything else is 403
//   area.refused (it leads elsewhere, perhaps into another area);
// - no system or global configuration, and over the repository's own a fixed set that turns off
//   every program git would start (hooks, fsmonitor, pager, editor, signing, auto-gc,
//   submodules, credential helpers, every protocol); diffs without external diff or textconv;
// - a repository whose own configuration names a program git could still start (a filter,
//   diff or merge driver, an external diff, fsmonitor, an include, another work tree) is
//   refused with 409 git.refused, which names the setting; nothing runs.
// The box's fence covers every kept folder's .git, so these commands see the whole home; what
// keeps them in their lane is that they start no program and follow no pointer they were given.
import { constants } from "node:fs";
import fs from "node:fs/promises";
import { WarrenError } from "../errors.js";
import { homeOf } from "../machines/placement.js";
import type { Workload } from "../workloads/index.js";

const GIT_TIMEOUT_MS = 60_000;
/** The most bytes of one configuration file read. */
const CONFIG_BYTES = 1024 * 1024;
/** The most entries of a `.git` folder looked at for links. */
const GIT_ENTRIES = 2_000_000;

export interface GitResult {
  code: number | null;
  out: string;
  err: string;
}

/** Where a command runs: the repository itself, or a conversation's worktree of it. */
export interface GitPlace {
  /** The repository's folder, relative to the home. */
  repo: string;
  /** The worktree's folder, relative to the home (its name is its folder under .git/worktrees). */
  worktree?: string | undefined;
}

/** Configuration keys (lower case) that make git start a program or look elsewhere. */
const REFUSED_KEYS: readonly RegExp[] = [
  /^include\./,
  /^includeif\./,
  /^core\.(worktree|pager|editor|askpass|sshcommand|gitproxy|alternaterefscommand)$/,
  /^filter\./,
  /^diff\.external$/,
  /^diff\..+\.(command|textconv)$/,
  /^merge\..+\.driver$/,
  /^gpg\./,
  /^credential\./,
  /^sequence\.editor$/,
];

/** core.fsmonitor is refused unless it says no. */
const FALSE = new Set(["false", "no", "off", "0"]);

/** The names of a configuration (`git config --list -z`) that warren will not run git with. */
export function refusedSettings(listing: string): string[] {
  const found = new Set<string>();
  for (const entry of listing.split("\0")) {
    if (entry === "") continue;
    const nl = entry.indexOf("\n");
    const key = (nl < 0 ? entry : entry.slice(0, nl)).toLowerCase();
    const value = nl < 0 ? "" : entry.slice(nl + 1);
    if (REFUSED_KEYS.some((r) => r.test(key))) found.add(key);
    else if (key === "core.fsmonitor" && !FALSE.has(value.trim().toLowerCase())) found.add(key);
  }
  return [...found];
}

const refused = (message: string): WarrenError => new WarrenError("area.refused", message);

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

async function lstat(p: string) {
  try {
    return await fs.lstat(p);
  } catch (err) {
    if (errno(err) === "ENOENT" || errno(err) === "ENOTDIR") return undefined;
    throw err;
  }
}

/**
 * Whether each folder of `rel` (below the home) is a real folder: "missing" when one is not
 * there (or is not a folder); a link on the way is refused, whatever it leads to.
 */
async function realFolders(hostHome: string, rel: string, what: string): Promise<"ok" | "missing"> {
  let at = hostHome;
  for (const name of rel.split("/")) {
    at = `${at}/${name}`;
    const st = await lstat(at);
    if (!st) return "missing";
    if (st.isSymbolicLink())
      throw refused(`${what} is or passes through a link; warren runs git only on a repository's own folder`);
    if (!st.isDirectory()) return "missing";
  }
  return "ok";
}

/** A small regular file, read without following a link; undefined when there is none. */
async function readNoFollow(p: string, max: number): Promise<Buffer | undefined> {
  let h;
  try {
    h = await fs.open(p, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if (errno(err) === "ENOENT") return undefined;
    if (errno(err) === "ELOOP") throw refused(`${p.split("/").slice(-2).join("/")} is a link`);
    throw err;
  }
  try {
    const st = await h.stat();
    if (!st.isFile()) throw refused(`${p.split("/").slice(-2).join("/")} is not a regular file`);
    if (st.size > max)
      throw new WarrenError(
        "git.refused",
        `${p.split("/").slice(-1)[0]} is larger than warren reads (${max} bytes)`,
      );
    return await h.readFile();
  } finally {
    await h.close();
  }
}

/**
 * Checks a `.git` folder on the host: no link anywhere in it (its hooks aside: they never run),
 * no `commondir` (a git folder of another repository), no alternates (objects of another). The
 * folders of one level are read together (a handful of rounds for any .git, not one per folder
 * behind whatever else the server is doing).
 */
async function checkGitFolder(gitDir: string, repo: string): Promise<void> {
  let seen = 0;
  const walk = async (dir: string, rel: string): Promise<void> => {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (errno(err) === "ENOENT") return;
      throw err;
    }
    const below: Promise<void>[] = [];
    for (const e of entries) {
      if (++seen > GIT_ENTRIES)
        throw new WarrenError(
          "git.refused",
          `${repo}/.git holds more than ${GIT_ENTRIES} entries; it is not checked`,
        );
      const at = rel === "" ? e.name : `${rel}/${e.name}`;
      if (rel === "" && e.name === "hooks") continue;
      if (e.isSymbolicLink())
        throw refused(`${repo}/.git/${at} is a link; warren runs git only on a repository's own .git folder`);
      if (at === "commondir" || at === "objects/info/alternates" || at === "objects/info/http-alternates")
        throw refused(
          `${repo}/.git/${at} names another repository; warren runs git only on a repository's own .git`,
        );
      if (e.isDirectory()) below.push(walk(`${dir}/${e.name}`, at));
    }
    // every folder below is read to its end (none left running), then the first refusal is told
    const ends = await Promise.allSettled(below);
    const failed = ends.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  };
  await walk(gitDir, "");
}

/**
 * A worktree's state, once checked: there; pending (neither its folder nor its entry under
 * .git/worktrees is there: a fork's, not checked out yet); gone (git knows it, its folder is not).
 */
type WorktreeState = "there" | "pending" | "gone";

/** How a command runs: where, with which index, fed what, at what priority. */
interface RunOptions {
  at?: "repo" | "worktree";
  limitBytes: number;
  /** An index of its own (GIT_INDEX_FILE, a path in the box) instead of the place's. */
  index?: string | undefined;
  stdin?: Buffer | undefined;
  /** Below everything else of the machine, CPU and disk (nice, ionice): a fork's work. */
  low?: boolean | undefined;
}

/** The git door of one repository of an agent's home. */
export class RepoGit {
  readonly #box: { repo: string; gitDir: string; worktree?: string; adminDir?: string };
  /** The worktree's state, known once `check` has run with one. */
  worktreeState: WorktreeState | undefined;

  constructor(
    private readonly work: Workload,
    /** The home's folder on the host. */
    private readonly hostHome: string,
    private readonly place: GitPlace,
  ) {
    const home = homeOf(work.agent.id);
    const repo = `${home}/${place.repo}`;
    this.#box = {
      repo,
      gitDir: `${repo}/.git`,
      ...(place.worktree
        ? {
            worktree: `${home}/${place.worktree}`,
            adminDir: `${repo}/.git/worktrees/${adminName(place.worktree)}`,
          }
        : {}),
    };
  }

  /**
   * Checks the repository (and the worktree, when there is one) before any command: answers
   * false when the repository's folder or its `.git` is not there; throws area.refused for a
   * link or a pointer elsewhere, git.refused for a configuration naming a program.
   */
  async check(opts: { worktreeMayBeMissing?: boolean } = {}): Promise<boolean> {
    const { hostHome, place } = this;
    if ((await realFolders(hostHome, place.repo, `repo: ${place.repo}`)) === "missing") return false;
    const dotGit = await lstat(`${hostHome}/${place.repo}/.git`);
    if (!dotGit) return false;
    if (!dotGit.isDirectory() || dotGit.isSymbolicLink())
      throw refused(
        `repo: ${place.repo}/.git is ${dotGit.isSymbolicLink() ? "a link" : "not a folder (a file naming another git folder)"}; warren runs git only on a repository's own .git folder`,
      );
    const gitDir = `${hostHome}/${place.repo}/.git`;
    await checkGitFolder(gitDir, place.repo);
    const configs = [`${gitDir}/config`, `${gitDir}/config.worktree`];
    if (place.worktree) {
      const name = adminName(place.worktree);
      configs.push(`${gitDir}/worktrees/${name}/config.worktree`);
      await this.#checkWorktree(name, opts.worktreeMayBeMissing === true);
    }
    for (const file of configs) {
      const text = await readNoFollow(file, CONFIG_BYTES);
      if (text === undefined) continue;
      // git reads its own syntax: the file is given on stdin, and nothing of it is included
      const listed = await this.#exec(["config", "--file", "-", "--no-includes", "--list", "-z"], {
        cwd: "/",
        stdin: text,
        repoEnv: false,
      });
      if (listed.code !== 0)
        throw new WarrenError(
          "git.refused",
          `${place.repo}/.git/${file.slice(gitDir.length + 1)} cannot be read: ${listed.err.trim()}`,
        );
      const bad = refusedSettings(listed.out);
      if (bad.length > 0)
        throw new WarrenError(
          "git.refused",
          `${place.repo}/.git/${file.slice(gitDir.length + 1)} sets ${bad.join(", ")}: a program or a place other than the repository's own, which warren does not run git with; remove ${bad.length > 1 ? "them" : "it"}`,
          { settings: bad },
        );
    }
    return true;
  }

  /** The worktree is a real folder whose `.git` file names exactly its own folder under .git/worktrees. */
  async #checkWorktree(name: string, mayBeMissing: boolean): Promise<void> {
    const { hostHome, place } = this;
    const wt = place.worktree ?? "";
    const state = await realFolders(hostHome, wt, `the worktree ${wt}`);
    const admin = await lstat(`${hostHome}/${place.repo}/.git/worktrees/${name}`);
    if (state === "missing") {
      this.worktreeState = admin ? "gone" : "pending";
      if (mayBeMissing) return;
      throw new WarrenError("not_found", `the conversation's worktree ${wt} is gone`);
    }
    this.worktreeState = "there";
    const want = `gitdir: ${this.#box.adminDir ?? ""}`;
    const file = await readNoFollow(`${hostHome}/${wt}/.git`, 4096).catch((err: unknown) => {
      if (err instanceof WarrenError) return Buffer.from("");
      throw err;
    });
    if (!admin?.isDirectory() || file?.toString("utf8").trim() !== want)
      throw refused(
        `the worktree's .git (${wt}/.git) does not name its own folder under ${place.repo}/.git/worktrees; warren runs no git on it (restore it or close the conversation)`,
      );
  }

  /** The repository's .git folder, as the box sees it. */
  get gitDir(): string {
    return this.#box.gitDir;
  }

  /** The worktree's own index, as the box sees it. */
  get worktreeIndex(): string {
    if (!this.#box.adminDir) throw new Error("no worktree");
    return `${this.#box.adminDir}/index`;
  }

  /**
   * A short sh script at the repository or in the worktree, in place of one git command, for
   * steps that would each cost a command of the box: `args` are its $1..$n, and after them
   * come the hardened settings (`git "$@"` runs git as `run` does: the same settings and
   * environment). Its script is warren's own text; what the repository holds reaches it only as
   * arguments or output.
   */
  script(text: string, args: string[], opts: RunOptions): Promise<GitResult> {
    return this.#at(args, opts, text);
  }

  /** A git command at the repository (`at: "repo"`) or in the worktree. */
  run(args: string[], opts: RunOptions): Promise<GitResult> {
    return this.#at(args, opts);
  }

  /** git (or a script of git commands) at the repository or in the worktree. */
  #at(args: string[], opts: RunOptions, script?: string): Promise<GitResult> {
    const inWorktree = opts.at === "worktree";
    if (inWorktree && !this.#box.worktree) throw new Error("no worktree to run git in");
    return this.#exec(args, {
      cwd: inWorktree ? (this.#box.worktree ?? "") : this.#box.repo,
      repoEnv: true,
      worktree: inWorktree,
      limitBytes: opts.limitBytes,
      stdin: opts.stdin,
      index: opts.index,
      low: opts.low,
      ...(script !== undefined ? { script } : {}),
    });
  }

  async #exec(
    args: string[],
    o: {
      cwd: string;
      stdin?: Buffer | undefined;
      repoEnv: boolean;
      worktree?: boolean;
      limitBytes?: number;
      index?: string | undefined;
      low?: boolean | undefined;
      script?: string | undefined;
    },
  ): Promise<GitResult> {
    const box = this.#box;
    const place: Record<string, string> = o.repoEnv
      ? o.worktree && box.worktree && box.adminDir
        ? { GIT_DIR: box.adminDir, GIT_COMMON_DIR: box.gitDir, GIT_WORK_TREE: box.worktree }
        : { GIT_DIR: box.gitDir, GIT_COMMON_DIR: box.gitDir, GIT_WORK_TREE: box.repo }
      : {};
    if (o.index) place.GIT_INDEX_FILE = o.index;
    const { result, stdout, stderr } = await this.work.collect(
      {
        argv: [
          ...(o.low ? LOW : []),
          ...(o.script !== undefined
            ? ["sh", "-c", o.script, "warren-git", ...args, ...hardened(box.repo)]
            : ["git", ...hardened(box.repo), ...args]),
        ],
        cwd: o.cwd,
        ...(o.stdin ? { stdin: o.stdin } : {}),
        own: { ...GIT_ENV, ...place },
        timeoutMs: GIT_TIMEOUT_MS,
      },
      { limitBytes: o.limitBytes ?? 256 * 1024 },
    );
    return { code: result.exitCode, out: stdout.text(), err: stderr.text() };
  }
}

/** The name of a worktree's folder under .git/worktrees: its own folder's name. */
const adminName = (worktree: string): string => worktree.split("/").at(-1) ?? worktree;

/** A command below the machine's other work: a low CPU share, the last of the disk's best effort. */
const LOW = ["nice", "-n", "10", "ionice", "-c", "2", "-n", "7"];

/** The environment of every git command: nothing of the system's or the user's. */
const GIT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  XDG_CONFIG_HOME: "/dev/null",
  GIT_ATTR_NOSYSTEM: "1",
  GIT_TERMINAL_PROMPT: "0",
  GIT_NO_REPLACE_OBJECTS: "1",
  GIT_PAGER: "cat",
  GIT_EDITOR: ":",
  GIT_SEQUENCE_EDITOR: ":",
  GIT_ASKPASS: "",
  SSH_ASKPASS: "",
  GIT_SSH_COMMAND: "false",
  GIT_PROTOCOL_FROM_USER: "0",
  GIT_OPTIONAL_LOCKS: "0",
};

/** Settings over the repository's own: every program git could start is off. */
export function hardened(repoBoxPath: string): string[] {
  const set = [
    "core.quotepath=off",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.pager=cat",
    "core.editor=:",
    "core.sshCommand=false",
    "credential.helper=",
    "protocol.allow=never",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "merge.verifySignatures=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "diff.noprefix=false",
    `safe.directory=${repoBoxPath}`,
  ];
  return set.flatMap((s) => ["-c", s]);
}
