// The schedule ticker under 1,000 schedules, timed: 1,000 schedules of `every_s = window`
// on 50 agents of one machine, their first slots spread evenly over one window, each fire
// a command run (`true`) on a real box. The fire delay is what each run says of itself: its
// `created_at` after its `scheduled_for` (the ticker waking, the overlap policy, the run
// written and queued). Fires the overlap policy skipped (the schedule's last run still
// going on) make no run and are counted apart.
//
//   node --import tsx bench/schedules.ts          (this section alone)
import { fileURLToPath } from "node:url";
import { startTestServer } from "../test/support/server.js";
import { summarize, type Sample } from "./stats.js";

export interface ScheduleFigures {
  schedules: number;
  /** The ticker handing a schedule due to its fire, after its slot (ms). */
  ticker: Sample;
  /** A run's created_at after its slot (ms). */
  delay: Sample;
  fired: number;
  skipped: number;
  windowS: number;
}

export async function benchSchedules(o: {
  schedules: number;
  agents: number;
  windowS: number;
  log: (line: string) => void;
}): Promise<ScheduleFigures> {
  const t = await startTestServer({ env: { WARREN_ORG_MAX_RUNS: "1000" } });
  const must = async (method: string, url: string, body?: unknown) => {
    const r = await t.call(method, url, body);
    if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  try {
    const org = await must("POST", "/api/orgs", { name: "bench-schedules" });
    const machine = await must("POST", "/api/machines", { org_id: org.id, name: "m" });
    const agents: string[] = [];
    for (let i = 0; i < o.agents; i++)
      agents.push(
        (await must("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: `a${i}` })).id,
      );
    // the box up before the first slot
    await must("POST", `/api/agents/${agents[0]}/exec`, { command: "true" });
    o.log(`schedules: making ${o.schedules} schedules on ${o.agents} agents`);
    // their first slots spread over one window, from a little after the last one is made
    const windowMs = o.windowS * 1000;
    const made = Date.now();
    await must("POST", `/api/agents/${agents[0]}/schedules`, {
      every_s: 3600,
      kind: "command",
      command: "true",
      paused: true,
    });
    const base = Date.now() + 5000 + o.schedules * 2 * (Date.now() - made);
    const ids: { id: string; agent: string }[] = [];
    for (let i = 0; i < o.schedules; i++) {
      const agent = agents[i % agents.length]!;
      const s = await must("POST", `/api/agents/${agent}/schedules`, {
        every_s: o.windowS,
        kind: "command",
        command: "true",
        start_at: new Date(base + Math.floor((i * windowMs) / o.schedules)).toISOString(),
      });
      ids.push({ id: s.id, agent });
    }
    if (Date.now() >= base)
      o.log("schedules: making them took longer than planned; the first slots were late");
    const before = t.server.firer.delays.length;
    const end = base + windowMs;
    o.log(`schedules: one window of ${o.windowS} s`);
    await new Promise((r) => setTimeout(r, Math.max(0, end - Date.now())));
    const ticker = summarize(t.server.firer.delays.slice(before));
    // pause them all: no fire after the window
    for (const s of ids) await must("PATCH", `/api/schedules/${s.id}`, { paused: true });
    const delays: number[] = [];
    for (const agent of agents) {
      const runs = (await must("GET", `/api/agents/${agent}/runs?limit=500`)).items as {
        created_at: string;
        scheduled_for?: string;
      }[];
      for (const r of runs) {
        if (!r.scheduled_for) continue;
        const slot = Date.parse(r.scheduled_for);
        if (slot >= base && slot < end) delays.push(Date.parse(r.created_at) - slot);
      }
    }
    let skipped = 0;
    for (const s of ids) skipped += (await must("GET", `/api/schedules/${s.id}`)).skipped as number;
    return {
      schedules: ids.length,
      ticker,
      delay: summarize(delays),
      fired: delays.length,
      skipped,
      windowS: o.windowS,
    };
  } finally {
    await t.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const f = await benchSchedules({
    schedules: 1000,
    agents: 50,
    windowS: Number(process.env.WARREN_BENCH_SCHEDULE_WINDOW_S ?? 60),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  console.log(JSON.stringify(f, null, 2));
}
