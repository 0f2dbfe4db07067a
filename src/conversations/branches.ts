// A branch per conversation. A conversation created with `repo` (a git repository folder of the
// home) works on `warren/<conversation id>` in its own worktree (`.warren/worktrees/<id>` of the
// home), made from the repository's current branch; after each turn the server commits what the
// turn changed there (author: the agent; message: the turn's first line and the person's name).
// Landing merges the branch into its base without touching anyone's work: the merge is computed
// apart (git merge-tree), a conflict is refused with its files, and the base moves only by a
// fast-forward that git itself refuses when it would overwrite an uncommitted change. Every git
// command goes through the git door (./git.ts): in the agent's box, with no secret, never with
// configuration, hooks or a `.git` pointer the repository holds.
import { lstat } from "node:fs/promises";
import { eq } from "drizzle-orm";
import type { AgentRow } from "../agents/service.js";
import type { HomeLayout } from "../boxes/index.js";
import { standing, type Fence } from "../areas/fence.js";
import type { ConversationDiff } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { parseHomePath } from "../homes/paths.js";
import { homeOf } from "../machines/placement.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { Workloads } from "../workloads/index.js";
import { RepoGit, type GitPlace, type GitResult } from "./git.js";

export type BranchRow = typeof schema.conversationBranches.$inferSelect;

/** The most bytes of a diff's patch answered. */
const PATCH_BYTES = 1024 * 1024;
const LIMIT = PATCH_BYTES + 64 * 1024;

/** The worktree of a conversation, relative to the home. */
export const worktreeOf = (conversationId: string): string => `.warren/worktrees/${conversationId}`;

/** Diffs never start a program the repository names. */
const DIFF = ["diff", "--no-ext-diff", "--no-textconv"];

/** A repository's git, checked: run at the repository, or in the conversation's worktree. */
interface Git {
  door: RepoGit;
  repo(args: string[]): Promise<GitResult>;
  worktree(args: string[]): Promise<GitResult>;
}

export class Branches {
  /** The worktrees being checked out on their first use (./fork.ts), by agent and folder. */
  readonly #checkouts = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly workloads: Pick<Workloads, "open">,
    private readonly layout: Pick<HomeLayout, "homeDir">,
  ) {}

  /**
   * The git door of a repository of the agent's home, checked first (see ./git.ts): null when
   * the repository or its .git is not there; refused when it leads elsewhere or names programs.
   */
  async #open(
    agent: AgentRow,
    place: GitPlace,
    opts: { worktreeMayBeMissing?: boolean } = {},
  ): Promise<Git | null> {
    // git needs none of the agent's secrets
    const work = await this.workloads.open(agent, { secrets: [] });
    await work.ready();
    const door = new RepoGit(work, this.layout.homeDir(agent.machineId, agent.id), place);
    if (!(await door.check(opts))) return null;
    return {
      door,
      repo: (args) => door.run(args, { at: "repo", limitBytes: LIMIT }),
      worktree: (args) => door.run(args, { at: "worktree", limitBytes: LIMIT }),
    };
  }

  async #checked(agent: AgentRow, b: BranchRow, withWorktree: boolean): Promise<Git> {
    const git = await this.#open(agent, {
      repo: b.repo,
      worktree: withWorktree ? (b.worktree ?? undefined) : undefined,
    });
    if (!git) throw new WarrenError("not_found", `the repository ${b.repo} is gone`);
    return git;
  }

  async of(conversationId: string): Promise<BranchRow | null> {
    const [b] = await this.db
      .select()
      .from(schema.conversationBranches)
      .where(eq(schema.conversationBranches.conversationId, conversationId));
    return b ?? null;
  }

  /**
   * Checks `repo` (inside the starter's fence, a git repository on a branch) and makes the
   * conversation's worktree on its own branch from the repository's current branch.
   */
  async create(agent: AgentRow, conversationId: string, rawRepo: string, fence: Fence): Promise<BranchRow> {
    const components = parseHomePath(agent.id, rawRepo);
    if (standing(components, fence) !== "inside")
      throw new WarrenError("area.refused", "that path is outside your areas");
    const repo = components.join("/");
    const home = homeOf(agent.id);
    const branch = `warren/${conversationId}`;
    const worktree = worktreeOf(conversationId);
    const notRepo = () =>
      new WarrenError(
        "request.invalid",
        `repo: ${repo} is not a git repository on a branch of the home; give the folder of one`,
        { field: "repo" },
      );
    // the worktree is made by warren alone: its folder does not exist yet, and nothing on the
    // way to it is a link
    const git = await this.#open(agent, { repo, worktree }, { worktreeMayBeMissing: true });
    if (!git) throw notRepo();
    const head = await git.repo(["symbolic-ref", "--short", "HEAD"]);
    if (head.code !== 0) throw notRepo();
    const base = head.out.trim();
    const add = await git.repo(["worktree", "add", "-q", "-b", branch, `${home}/${worktree}`, base]);
    if (add.code !== 0)
      throw new WarrenError(
        "request.invalid",
        `repo: the conversation's worktree could not be made: ${add.err.trim()}`,
        { field: "repo" },
      );
    // what git made is what warren checks from now on
    if (!(await this.#open(agent, { repo, worktree }))) throw notRepo();
    const [row] = await this.db
      .insert(schema.conversationBranches)
      .values({ conversationId, repo, branch, base, worktree })
      .returning();
    if (!row) throw new Error("branch insert returned nothing");
    return row;
  }

  /**
   * A fork's branch (see ./fork.ts): `warren/<fork id>` made from the head of the source's
   * branch with the source worktree's uncommitted changes (modified, added, deleted and
   * untracked files; not those the repository ignores) in one commit on it, made without any
   * checkout, in one command of the box (SNAPSHOT): an index of its own (a copy of the source
   * worktree's, whose stat data spares hashing unchanged files), `git add -A` of the source's
   * worktree into it (a link is stored as a link, never followed), then write-tree,
   * commit-tree and update-ref. Its cost is one look at the worktree's files (as `git status`)
   * and the changed ones hashed, never a checkout of the repository's files nor a walk of its
   * history; the fork's worktree is checked out on its first use (`ready`). Nothing of the
   * source is locked or changed: its index is only copied, never written or locked; its files
   * are read as they are at that moment; every step runs in the agent's box, as the agent,
   * below the machine's other work (nice, ionice).
   */
  async fork(
    agent: AgentRow,
    source: BranchRow,
    forkId: string,
    fence: Fence,
    message: string,
  ): Promise<BranchRow> {
    if (standing(source.repo.split("/"), fence) !== "inside")
      throw new WarrenError("area.refused", "that path is outside your areas");
    const branch = `warren/${forkId}`;
    const from = await this.#open(
      agent,
      { repo: source.repo, worktree: source.worktree ?? undefined },
      { worktreeMayBeMissing: true },
    );
    if (!from) throw new WarrenError("not_found", `the repository ${source.repo} is gone`);
    const head = await from.repo(["rev-parse", "--verify", "-q", `refs/heads/${source.branch}^{commit}`]);
    if (head.code !== 0) throw new WarrenError("not_found", `the branch ${source.branch} is gone`);
    // a source with no worktree there (closed, or a fork not used yet) has nothing uncommitted
    let commit = head.out.trim();
    if (from.door.worktreeState === "there")
      commit = await this.#snapshot(agent, from.door, commit, branch, forkId, message);
    else {
      // "": the branch must not exist yet
      const made = await from.repo(["update-ref", `refs/heads/${branch}`, commit, ""]);
      if (made.code !== 0) throw new Error(`git update-ref failed: ${made.err.trim()}`);
    }
    try {
      const [row] = await this.db
        .insert(schema.conversationBranches)
        .values({
          conversationId: forkId,
          repo: source.repo,
          branch,
          base: source.base,
          worktree: worktreeOf(forkId),
        })
        .returning();
      if (!row) throw new Error("branch insert returned nothing");
      return row;
    } catch (err) {
      // nothing of a failed fork stays
      await from.repo(["update-ref", "-d", `refs/heads/${branch}`, commit]);
      throw err;
    }
  }

  /**
   * The fork's branch made on `head` with the source worktree's uncommitted changes committed
   * on it, without touching the source (see `fork`), in one command of the box: answers its
   * commit (`head` when nothing changed).
   */
  async #snapshot(
    agent: AgentRow,
    door: RepoGit,
    head: string,
    branch: string,
    forkId: string,
    message: string,
  ): Promise<string> {
    // the fork's own index, in the repository's .git (the box's /tmp is not kept between commands)
    const index = `${door.gitDir}/warren-fork-${forkId}.index`;
    const args = [
      index,
      door.worktreeIndex,
      head,
      `refs/heads/${branch}`,
      agent.name,
      `${agent.id}@agents.warren`,
    ];
    const made = await door.script(SNAPSHOT, args, {
      at: "worktree",
      limitBytes: 64 * 1024,
      stdin: Buffer.from(message),
      low: true,
    });
    if (made.code !== 0) throw new Error(`the fork's commit failed: ${made.err.trim().slice(0, 500)}`);
    return made.out.trim();
  }

  /**
   * The branch's worktree made there when it is pending (a fork's, checked out on its first
   * use: `git worktree add` of its branch); concurrent first uses wait on the same checkout. A
   * worktree git still knows whose folder is gone is left as it is (its next command says so).
   */
  async ready(agent: AgentRow, b: BranchRow): Promise<void> {
    if (!b.worktree) return;
    // every turn asks: a worktree there already (any entry of its name, checked by the git
    // commands that use it) costs one lstat, not an open of the repository
    const there = await lstat(`${this.layout.homeDir(agent.machineId, agent.id)}/${b.worktree}`).then(
      () => true,
      () => false,
    );
    if (there) return;
    const key = `${agent.id}/${b.worktree}`;
    let going = this.#checkouts.get(key);
    if (!going) {
      going = this.#checkOut(agent, b, b.worktree).finally(() => this.#checkouts.delete(key));
      this.#checkouts.set(key, going);
    }
    try {
      await going;
    } catch (err) {
      // settings git is never run with (planted in the repository): nothing was checked out or
      // run; the turn goes on and its commit says why it is refused, as for any worktree
      if (!(err instanceof WarrenError && err.code === "git.refused")) throw err;
    }
  }

  async #checkOut(agent: AgentRow, b: BranchRow, worktree: string): Promise<void> {
    const git = await this.#open(agent, { repo: b.repo, worktree }, { worktreeMayBeMissing: true });
    if (!git) throw new WarrenError("not_found", `the repository ${b.repo} is gone`);
    if (git.door.worktreeState !== "pending") return;
    const add = await git.repo(["worktree", "add", "-q", `${homeOf(agent.id)}/${worktree}`, b.branch]);
    if (add.code !== 0)
      throw new Error(`git worktree add of the conversation's worktree failed: ${add.err.trim()}`);
    // what git made is what warren checks from now on
    await this.#checked(agent, b, true);
  }

  /** The worktree's git; null when it is pending (not checked out yet, so nothing of it changed). */
  async #worktreeOf(agent: AgentRow, b: BranchRow): Promise<Git | null> {
    const git = await this.#open(
      agent,
      { repo: b.repo, worktree: b.worktree ?? undefined },
      { worktreeMayBeMissing: true },
    );
    if (!git) throw new WarrenError("not_found", `the repository ${b.repo} is gone`);
    if (git.door.worktreeState === "pending") return null;
    if (git.door.worktreeState !== "there")
      throw new WarrenError("not_found", `the conversation's worktree ${b.worktree} is gone`);
    return git;
  }

  /** Commits what changed in the worktree; answers the commit, or null when nothing changed. */
  async commit(agent: AgentRow, b: BranchRow, message: string): Promise<string | null> {
    if (!b.worktree) return null;
    const git = await this.#worktreeOf(agent, b);
    return git ? this.#commitIn(agent, git, message) : null;
  }

  async #commitIn(agent: AgentRow, git: Git, message: string): Promise<string | null> {
    const add = await git.worktree(["add", "-A"]);
    if (add.code !== 0) throw new Error(`git add failed: ${add.err.trim()}`);
    const staged = await git.worktree([...DIFF, "--cached", "--quiet"]);
    if (staged.code === 0) return null;
    const who = ["-c", `user.name=${agent.name}`, "-c", `user.email=${agent.id}@agents.warren`];
    const c = await git.worktree([...who, "commit", "-q", "--no-verify", "-m", message]);
    if (c.code !== 0) throw new Error(`git commit failed: ${c.err.trim()}`);
    return (await git.worktree(["rev-parse", "HEAD"])).out.trim();
  }

  async diff(agent: AgentRow, b: BranchRow): Promise<ConversationDiff> {
    const git = await this.#checked(agent, b, false);
    const range = `${b.base}...${b.branch}`;
    const counts = await git.repo(["rev-list", "--left-right", "--count", range]);
    if (counts.code !== 0)
      throw new WarrenError("not_found", `the branch ${b.branch} or its base ${b.base} is gone`);
    const [behind, ahead] = counts.out.trim().split(/\s+/).map(Number);
    const numstat = (await git.repo([...DIFF, "--numstat", "-z", range])).out;
    const status = (await git.repo([...DIFF, "--name-status", "-z", range])).out;
    const statuses = new Map<string, string>();
    const st = status.split("\0");
    for (let i = 0; i + 1 < st.length;) {
      const code = st[i] ?? "";
      if (code.startsWith("R") || code.startsWith("C")) {
        statuses.set(st[i + 2] ?? "", code[0] === "R" ? "renamed" : "copied");
        i += 3;
      } else {
        statuses.set(
          st[i + 1] ?? "",
          { A: "added", D: "deleted", M: "modified" }[code[0] ?? ""] ?? "modified",
        );
        i += 2;
      }
    }
    const files: ConversationDiff["files"] = [];
    const ns = numstat.split("\0");
    for (let i = 0; i < ns.length; i++) {
      const line = ns[i] ?? "";
      if (line === "") continue;
      const [add, del, name] = line.split("\t");
      let path = name ?? "";
      // a rename: "add\tdel\t" then the old and new names
      if (path === "") {
        path = ns[i + 2] ?? "";
        i += 2;
      }
      files.push({
        path,
        status: statuses.get(path) ?? "modified",
        additions: add === "-" ? 0 : Number(add),
        deletions: del === "-" ? 0 : Number(del),
      });
    }
    const patch = await git.repo([...DIFF, range]);
    return {
      base: b.base,
      branch: b.branch,
      ahead: ahead ?? 0,
      behind: behind ?? 0,
      files,
      patch: patch.out.slice(0, PATCH_BYTES),
      patch_truncated: patch.out.length > PATCH_BYTES,
    };
  }

  /**
   * Merges the branch into its base. The merge is computed apart; a conflict is 409
   * branch.conflict with its files; the base moves by a fast-forward only (in the repository's
   * own checkout when the base is checked out there, which git refuses when it would overwrite
   * an uncommitted change: then 409 too, nothing touched).
   */
  async land(agent: AgentRow, b: BranchRow, message: string): Promise<string> {
    const git = await this.#checked(agent, b, false);
    const who = ["-c", `user.name=${agent.name}`, "-c", `user.email=${agent.id}@agents.warren`];
    const baseRef = `refs/heads/${b.base}`;
    const old = await git.repo(["rev-parse", "--verify", baseRef]);
    if (old.code !== 0) throw new WarrenError("not_found", `the base branch ${b.base} is gone`);
    const merged = await git.repo([
      "merge-tree",
      "--write-tree",
      "--name-only",
      "--no-messages",
      b.base,
      b.branch,
    ]);
    const lines = merged.out.split("\n").filter((l) => l !== "");
    if (merged.code === 1) {
      throw new WarrenError(
        "branch.conflict",
        `the branch conflicts with ${b.base} in: ${[...new Set(lines.slice(1))].join(", ")}; nothing was changed`,
        { files: [...new Set(lines.slice(1))] },
      );
    }
    if (merged.code !== 0 || !lines[0]) throw new Error(`git merge-tree failed: ${merged.err.trim()}`);
    const tree = lines[0];
    const commit = await git.repo([...who, "commit-tree", tree, "-p", b.base, "-p", b.branch, "-m", message]);
    if (commit.code !== 0) throw new Error(`git commit-tree failed: ${commit.err.trim()}`);
    const sha = commit.out.trim();
    const head = await git.repo(["symbolic-ref", "-q", "HEAD"]);
    if (head.code === 0 && head.out.trim() === baseRef) {
      // the base is checked out: its checkout moves with it, or nothing moves
      const ff = await git.repo(["merge", "--ff-only", "-q", sha]);
      if (ff.code !== 0) {
        const files = ff.err
          .split("\n")
          .filter((l) => l.startsWith("\t"))
          .map((l) => l.trim());
        throw new WarrenError(
          "branch.conflict",
          `landing would overwrite uncommitted changes in ${b.repo}${files.length ? `: ${files.join(", ")}` : ""}; commit or move them first, nothing was changed`,
          { files },
        );
      }
    } else {
      const moved = await git.repo(["update-ref", baseRef, sha, old.out.trim()]);
      if (moved.code !== 0)
        throw new WarrenError("branch.conflict", `${b.base} moved meanwhile; land again`, { files: [] });
    }
    await this.db
      .update(schema.conversationBranches)
      .set({ landedCommit: sha })
      .where(eq(schema.conversationBranches.conversationId, b.conversationId));
    return sha;
  }

  /** A closed conversation: its last changes committed, its worktree removed, its branch kept. */
  async close(agent: AgentRow, b: BranchRow, message: string): Promise<void> {
    if (!b.worktree) return;
    // a worktree never checked out has nothing to commit or remove
    const git = await this.#worktreeOf(agent, b);
    if (git) {
      await this.#commitIn(agent, git, message);
      const r = await git.repo(["worktree", "remove", `${homeOf(agent.id)}/${b.worktree}`]);
      if (r.code !== 0) throw new Error(`git worktree remove failed: ${r.err.trim()}`);
    }
    await this.db
      .update(schema.conversationBranches)
      .set({ worktree: null })
      .where(eq(schema.conversationBranches.conversationId, b.conversationId));
  }
}

/**
 * The fork's commit (see `Branches.fork`), as one command of the box. $1 the fork's index (a
 * new file), $2 the source worktree's index (copied: its stat data spares hashing the files
 * that did not change; only read, never locked), $3 the head, $4 the fork's branch (which must
 * not exist yet), $5 and $6 the author; the message on stdin. `git add -A` in the source's
 * worktree with the fork's index takes every change git's status would show (untracked too,
 * ignored ones not, a link as a link), its new blobs written as loose objects (a blob the
 * repository holds already is not written again: forking the same changes twice writes only
 * the commit; streaming every blob into a pack instead costs the whole write each time);
 * write-tree, commit-tree and update-ref then make the branch. The fork's index goes whatever happens. Prints the commit.
 */
const SNAPSHOT = `set -e
i=$1 from=$2 head=$3 ref=$4 name=$5 email=$6
shift 6
trap 'rm -f -- "$i" "$i.lock"' EXIT
if [ -f "$from" ]; then cp -- "$from" "$i"; else GIT_INDEX_FILE=$i git "$@" read-tree "$head"; fi
export GIT_INDEX_FILE="$i"
git "$@" add -A
tree=$(git "$@" write-tree)
if [ "$tree" = "$(git "$@" rev-parse "$head^{tree}")" ]; then c=$head
else c=$(git "$@" -c "user.name=$name" -c "user.email=$email" commit-tree "$tree" -p "$head" -F -)
fi
git "$@" update-ref "$ref" "$c" ""
echo "$c"
`;
