// Usage you can see: an organisation's dashboard (machines up, runs going, approvals waiting,
// spend this month) and charts of what its runs (or one agent's) used over the last hour, day
// or month (GET /api/orgs/:id/usage), drawn as SVG here.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { isTerminalRunStatus } from "warren/sdk";
import { keys, useOrgs, warren } from "../api";
import { Link, useTitle } from "../router";
import { ErrorBox, Loading } from "../ui";

type Answer = Awaited<ReturnType<typeof warren.orgs.usage>>;
type Point = Answer["series"][number];

const SPANS = {
  hour: { label: "Last hour", ms: 3_600_000, step: "1m" },
  day: { label: "Last day", ms: 86_400_000, step: "30m" },
  month: { label: "Last 30 days", ms: 30 * 86_400_000, step: "1d" },
} as const;
type Span = keyof typeof SPANS;

const dollars = (x: number) => `$${x.toFixed(x !== 0 && x < 0.01 ? 4 : 2)}`;
const whole = (x: number) => (x >= 10_000 ? `${(x / 1000).toFixed(1)}k` : String(Math.round(x * 100) / 100));

const W = 600;
const H = 140;
const PAD = { left: 48, right: 8, top: 10, bottom: 22 };

/** One figure over the span: a bar a step (a line for the disk), the largest value on the axis. */
function Chart({
  title,
  id,
  points,
  pick,
  show,
  line,
}: {
  title: string;
  id: string;
  points: Point[];
  pick: (p: Point) => number | null;
  show: (x: number) => string;
  line?: boolean;
}) {
  const values = points.map(pick);
  const max = Math.max(0, ...values.map((v) => v ?? 0));
  const total = values.reduce<number>((s, v) => s + (v ?? 0), 0);
  const iw = W - PAD.left - PAD.right;
  const ih = H - PAD.top - PAD.bottom;
  const bw = iw / Math.max(1, points.length);
  const y = (v: number) => PAD.top + ih - (max === 0 ? 0 : (v / max) * ih);
  const label = (p: Point) => new Date(p.at).toLocaleString();
  const first = points[0];
  const last = points[points.length - 1];
  const path = values
    .map((v, i) => (v === null ? null : `${PAD.left + i * bw + bw / 2},${y(v)}`))
    .filter((s): s is string => s !== null);
  return (
    <figure
      className="card"
      style={{ margin: 0, minHeight: 0 }}
      data-testid={`chart-${id}`}
      data-max={max}
      data-total={total}
    >
      <figcaption>
        <strong>{title}</strong>{" "}
        <span className="sub">{line ? `latest ${show(lastOf(values))}` : `in all ${show(total)}`}</span>
      </figcaption>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        width="100%"
        role="img"
        aria-label={`${title} over time, at most ${show(max)} a step`}
      >
        <line x1={PAD.left} x2={W - PAD.right} y1={PAD.top + ih} y2={PAD.top + ih} stroke="var(--line)" />
        <text x={PAD.left - 4} y={PAD.top + 8} textAnchor="end" fontSize="10" fill="var(--muted)">
          {show(max)}
        </text>
        <text x={PAD.left - 4} y={PAD.top + ih} textAnchor="end" fontSize="10" fill="var(--muted)">
          0
        </text>
        {first && last ? (
          <>
            <text x={PAD.left} y={H - 6} fontSize="10" fill="var(--muted)">
              {label(first)}
            </text>
            <text x={W - PAD.right} y={H - 6} textAnchor="end" fontSize="10" fill="var(--muted)">
              {label(last)}
            </text>
          </>
        ) : null}
        {line ? (
          path.length > 0 ? (
            <>
              <polyline points={path.join(" ")} fill="none" stroke="var(--accent)" strokeWidth="2" />
              {path.map((xy, i) => {
                const [cx, cy] = xy.split(",");
                return <circle key={i} cx={cx} cy={cy} r="3" fill="var(--accent)" data-testid="point" />;
              })}
            </>
          ) : null
        ) : (
          values.map((v, i) =>
            v ? (
              <rect
                key={i}
                data-testid="bar"
                data-value={v}
                x={PAD.left + i * bw + bw * 0.1}
                width={Math.max(1, bw * 0.8)}
                y={y(v)}
                height={PAD.top + ih - y(v)}
                fill="var(--accent)"
              >
                <title>{`${label(points[i]!)}: ${show(v)}`}</title>
              </rect>
            ) : null,
          )
        )}
      </svg>
    </figure>
  );
}

function lastOf(values: (number | null)[]): number {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i]!;
  return 0;
}

/** The charts of an organisation's usage, or of one agent's, with the span to show. */
export function UsageCharts({ orgId, agentId }: { orgId: string; agentId?: string }) {
  const [span, setSpan] = useState<Span>("day");
  const s = SPANS[span];
  const usage = useQuery({
    queryKey: ["usage-series", orgId, agentId ?? "", span],
    queryFn: () => {
      // whole steps that end at the next step after now, so that the last bar is the current one
      const stepMs = span === "hour" ? 60_000 : span === "day" ? 1_800_000 : 86_400_000;
      const until = new Date(Math.ceil((Date.now() + 1) / stepMs) * stepMs);
      const since = new Date(until.getTime() - s.ms);
      return warren.orgs.usage(orgId, {
        since: since.toISOString(),
        until: until.toISOString(),
        step: s.step,
        ...(agentId ? { agent: agentId } : {}),
      });
    },
    refetchInterval: 15_000,
  });
  const u = usage.data;
  return (
    <section aria-label="usage over time" data-testid="usage">
      <div role="group" aria-label="span" className="sub">
        {(Object.keys(SPANS) as Span[]).map((k) => (
          <button
            key={k}
            type="button"
            className={k === span ? undefined : "secondary"}
            aria-pressed={k === span}
            onClick={() => setSpan(k)}
          >
            {SPANS[k].label}
          </button>
        ))}
      </div>
      <ErrorBox error={usage.error} />
      {u ? (
        <>
          <p data-testid="usage-totals">
            {u.totals.execs} runs, {u.totals.tokens_in + u.totals.tokens_out} tokens ({u.totals.tokens_in} in,{" "}
            {u.totals.tokens_out} out), {dollars(u.totals.usd)}, {whole(u.totals.cpu_seconds)} CPU seconds.
          </p>
          <div className="cards" style={{ gridTemplateColumns: "repeat(auto-fit, minmax(440px, 1fr))" }}>
            <Chart
              title="Tokens"
              id="tokens"
              points={u.series}
              pick={(p) => p.tokens_in + p.tokens_out}
              show={whole}
            />
            <Chart title="Dollars" id="usd" points={u.series} pick={(p) => p.usd} show={dollars} />
            <Chart title="CPU seconds" id="cpu" points={u.series} pick={(p) => p.cpu_seconds} show={whole} />
            <Chart title="Runs (execs)" id="execs" points={u.series} pick={(p) => p.execs} show={whole} />
            <Chart
              title="Disk (MiB)"
              id="disk"
              points={u.series}
              pick={(p) => p.disk_mib}
              show={(x) => `${whole(x)} MiB`}
              line
            />
          </div>
        </>
      ) : (
        <Loading rows={3} />
      )}
    </section>
  );
}

/** Machines up, runs going, approvals waiting, spend this month: the organisation at a glance. */
export function OrgDashboard({ orgId }: { orgId: string }) {
  const machines = useQuery({
    queryKey: keys.machines(orgId),
    queryFn: () => warren.machines.list({ org_id: orgId }).then((l) => l.items),
  });
  const agents = useQuery({
    queryKey: keys.agents(orgId),
    queryFn: () => warren.agents.list({ org_id: orgId }).then((l) => l.items),
  });
  const going = useQuery({
    queryKey: ["runs-going", orgId, (agents.data ?? []).map((a) => a.id).join(",")],
    enabled: agents.data !== undefined,
    queryFn: async () => {
      const lists = await Promise.all((agents.data ?? []).map((a) => warren.runs.list(a.id, { limit: 50 })));
      return lists.flatMap((l) => l.items).filter((r) => !isTerminalRunStatus(r.status)).length;
    },
    refetchInterval: 5000,
  });
  const approvals = useQuery({
    queryKey: ["approvals-waiting", orgId],
    queryFn: () => warren.approvals.ofOrg(orgId, "waiting").then((l) => l.items.length),
    refetchInterval: 5000,
  });
  const month = useQuery({
    queryKey: ["usage-month", orgId],
    queryFn: () => {
      const now = new Date();
      const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      return warren.orgs.usage(orgId, { since: since.toISOString(), until: now.toISOString(), step: "1d" });
    },
    refetchInterval: 15_000,
  });
  const up = machines.data?.filter((m) => m.state === "running").length;
  const tile = (id: string, label: string, value: string | undefined, of?: string) => (
    <div className="card" style={{ minHeight: 0 }} data-testid={`tile-${id}`}>
      {/* a figure's name, not a section: the page's headings stay its sections' */}
      <p className="sub" data-testid={`label-${id}`}>
        {label}
      </p>
      <p>
        <strong data-testid={`value-${id}`}>{value ?? "…"}</strong>
        {of ? <span className="sub"> {of}</span> : null}
      </p>
    </div>
  );
  return (
    <section aria-label="dashboard" data-testid="dashboard">
      <ErrorBox error={machines.error ?? going.error ?? approvals.error ?? month.error} />
      <div className="cards">
        {tile(
          "machines",
          "Machines up",
          up === undefined ? undefined : String(up),
          machines.data ? `of ${machines.data.length}` : undefined,
        )}
        {tile("runs", "Runs going", going.data === undefined ? undefined : String(going.data))}
        {tile(
          "approvals",
          "Approvals waiting",
          approvals.data === undefined ? undefined : String(approvals.data),
        )}
        {tile(
          "spend",
          "Spend this month",
          month.data ? dollars(month.data.totals.usd) : undefined,
          month.data ? `${month.data.totals.tokens_in + month.data.totals.tokens_out} tokens` : undefined,
        )}
      </div>
    </section>
  );
}

/** `/orgs/:id/usage`: the dashboard and the organisation's charts. */
export function OrgUsagePage({ id }: { id: string }) {
  const orgs = useOrgs();
  const org = orgs.data?.find((o) => o.id === id);
  useTitle(`Usage of ${org?.name ?? "organisation"}`);
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> / <Link href={`/orgs/${id}`}>{org?.name ?? "organisation"}</Link>{" "}
        /
      </p>
      <h1>Usage</h1>
      <OrgDashboard orgId={id} />
      <UsageCharts orgId={id} />
    </section>
  );
}
