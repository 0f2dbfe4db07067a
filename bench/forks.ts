// Forking a branch conversation, timed: its repository holds `files` files (packed, as a clone
// is) and its worktree `changed` uncommitted changes (three fifths modified, three tenths new
// and untracked, a tenth deleted). Rows: POST /api/conversations/:id/fork over real HTTP, to
// its 201 (target p50 ≤ 500 ms on this host), and the source's pause while a fork goes on: a
// client reading the source's messages back to back, the longest of its reads during the fork
// beyond the median of the same reads with no fork (target ≤ 20 ms); the server's event-loop
// delay beside it (no lock of the source is held: its longest stall is the server's). Beside
// the fork, its floor: a bare `git worktree add` of the same tree, timed inside the box.
//
//   node --import tsx bench/forks.ts          (this section alone)
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../test/support/server.js";
import { jsonClient } from "./clients.js";
import { summarize, type Sample } from "./stats.js";

export interface ForkFigures {
  /** The fork's request to its answer (ms). */
  fork: Sample;
  /** Per fork: the source's longest read during it beyond the idle median (ms). */
  pause: Sample;
  /** Per fork: the server's longest event-loop delay during it (ms). */
  loopMax: Sample;
  /** Its floor: a bare `git worktree add` of the same tree in the box, timed inside it (ms). */
  checkout: Sample;
  /** The source's read with no fork going on, median (ms). */
  idleRead: number;
  files: number;
  changed: number;
}

export async function benchForks(o: {
  forks: number;
  files: number;
  changed: number;
  log: (line: string) => void;
}): Promise<ForkFigures> {
  const t = await startTestServer({ listen: true, env: { BOX_IDLE_S: "3600" } });
  const api = jsonClient(t.url!, 8);
  const probe = jsonClient(t.url!, 1);
  let machine: string | undefined;
  try {
    const { ok } = api;
    const org = await ok("POST", "/api/orgs", { name: "forks" });
    machine = (await ok("POST", "/api/machines", { org_id: org.id, name: "forks", max_workspace_mib: 8192 }))
      .id as string;
    // its model is never called: forking runs no turn
    const agent = await ok("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine,
      name: "forker",
      kind: "assistant",
      model: { provider: "openai-compatible", name: "unused", base_url: "http://127.0.0.1:9/v1" },
    });
    const sh = async (command: string) => {
      const r = await ok("POST", `/api/agents/${agent.id}/exec`, { command, timeout_ms: 300_000 });
      if (r.exit_code !== 0) throw new Error(`${command.slice(0, 80)}: ${r.stderr as string}`);
      return r.stdout as string;
    };
    const dirs = Math.ceil(o.files / 200);
    o.log(`forks: a repository of ${o.files} files in ${dirs} folders`);
    await sh(
      `mkdir -p ~/big && cd ~/big && git init -q -b main && for d in $(seq 0 ${dirs - 1}); do mkdir d$d; for f in $(seq 0 199); do [ $((d*200+f)) -lt ${o.files} ] && echo "line $d $f" > d$d/f$f.txt; done; done; git add -A && git -c gc.auto=0 -c user.name=b -c user.email=b@x commit -qm init && git gc -q`,
    );
    const src = await ok("POST", `/api/agents/${agent.id}/conversations`, { title: "source", repo: "big" });
    const wt = `~/.warren/worktrees/${src.id}`;
    const [modified, added] = [Math.round(o.changed * 0.6), Math.round(o.changed * 0.3)];
    const deleted = o.changed - modified - added;
    await sh(
      `cd ${wt} && for i in $(seq 0 ${modified - 1}); do echo changed >> d$((i % ${dirs}))/f$((i / ${dirs})).txt; done; mkdir -p new && for i in $(seq 1 ${added}); do echo new $i > new/n$i.txt; done; for i in $(seq 0 ${deleted - 1}); do rm d$((i % ${dirs}))/f$((199 - i / ${dirs})).txt; done`,
    );
    const status = await sh(`cd ${wt} && git status --porcelain --untracked-files=all | wc -l`);
    if (Number(status.trim()) !== o.changed)
      throw new Error(`the source has ${status.trim()} changes, not ${o.changed}`);

    const read = async () => {
      const t0 = performance.now();
      const r = await probe.call("GET", `/api/conversations/${src.id}/messages`);
      if (r.status !== 200) throw new Error(`reading the source answered ${r.status}`);
      return performance.now() - t0;
    };
    const idle: number[] = [];
    for (let i = 0; i < 200; i++) idle.push(await read());
    const idleRead = summarize(idle).p50;

    const forks: number[] = [];
    const checkouts: number[] = [];
    const pauses: number[] = [];
    const loops: number[] = [];
    o.log(`forks: ${o.forks} forks of a source with ${o.changed} uncommitted changes`);
    for (let i = 0; i < o.forks; i++) {
      // the floor, just before: git alone checking the same tree out on the same disk
      const floor = await sh(
        `cd ~/big && s=$(date +%s%N) && git worktree add -q --detach ~/.floor HEAD && e=$(date +%s%N) && git worktree remove --force ~/.floor && echo $(( (e - s) / 1000000 ))`,
      );
      checkouts.push(Number(floor.trim()));
      const loop = monitorEventLoopDelay({ resolution: 1 });
      let done = false;
      let longest = 0;
      const reads = (async () => {
        while (!done) longest = Math.max(longest, await read());
      })();
      loop.enable();
      const t0 = performance.now();
      const f = await api.call("POST", `/api/conversations/${src.id}/fork`, {});
      forks.push(performance.now() - t0);
      loop.disable();
      done = true;
      await reads;
      if (f.status !== 201) throw new Error(`the fork answered ${f.status}: ${JSON.stringify(f.body)}`);
      pauses.push(Math.max(0, longest - idleRead));
      loops.push(loop.max / 1e6);
      // the fork holds the source's changes
      const changes = await sh(
        `cd ~/big && git diff --name-only ${f.body.branch as string}~1 ${f.body.branch as string} | wc -l`,
      );
      if (Number(changes.trim()) !== o.changed)
        throw new Error(`the fork's commit holds ${changes.trim()} changes, not ${o.changed}`);
    }
    return {
      fork: summarize(forks),
      checkout: summarize(checkouts),
      pause: summarize(pauses),
      loopMax: summarize(loops),
      idleRead,
      files: o.files,
      changed: o.changed,
    };
  } finally {
    if (machine) await api.call("POST", `/api/machines/${machine}/stop`).catch(() => undefined);
    api.close();
    probe.close();
    await t.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const f = await benchForks({
    forks: Number(process.env.FORKS ?? 7),
    files: 20_000,
    changed: 500,
    log: (l) => process.stderr.write(`${l}\n`),
  });
  console.log(JSON.stringify(f, null, 2));
}
