// The Egress tab: every request or tunnel the agent's commands made through the egress proxy,
// allowed or refused, newest first (read again every 5 s), older pages on demand.
import { useInfiniteQuery } from "@tanstack/react-query";
import { useState } from "react";
import { warren } from "../api";
import { Link } from "../router";
import { Action, bytes, Empty, ErrorBox, Loading, when } from "../ui";

type Decision = "" | "allowed" | "refused";

export function EgressTab({ agentId }: { agentId: string }) {
  const [decision, setDecision] = useState<Decision>("");
  const pages = useInfiniteQuery({
    queryKey: ["egress", agentId, decision],
    queryFn: ({ pageParam }) =>
      warren.agent(agentId).egress({
        limit: 50,
        ...(decision ? { decision } : {}),
        ...(pageParam ? { before: pageParam } : {}),
      }),
    initialPageParam: "",
    getNextPageParam: (last) => last.next,
    refetchInterval: 5000,
  });
  const items = pages.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section>
      <p className="sub">
        What the agent's commands reached through the egress proxy, by its sandbox policy's network part
        (Settings).
      </p>
      <label>
        Decision
        <select
          name="egress_decision"
          value={decision}
          onChange={(e) => setDecision(e.target.value as Decision)}
        >
          <option value="">all</option>
          <option value="allowed">allowed</option>
          <option value="refused">refused</option>
        </select>
      </label>
      <ErrorBox error={pages.error} />
      {pages.isPending ? (
        <Loading rows={4} />
      ) : items.length === 0 ? (
        <Empty>
          Nothing went out yet. A command that reaches a host (through the proxy its HTTP_PROXY names) is
          recorded here, allowed or refused; allow hosts in Settings.
        </Empty>
      ) : (
        <table data-testid="egress">
          <thead>
            <tr>
              <th>When</th>
              <th>Decision</th>
              <th>Where</th>
              <th>Why</th>
              <th>Bytes out / in</th>
              <th>Run</th>
            </tr>
          </thead>
          <tbody>
            {items.map((e, i) => (
              <tr key={`${e.at}-${i}`}>
                <td>{when(e.at)}</td>
                <td>
                  <span className={`badge s-${e.decision === "allowed" ? "succeeded" : "failed"}`}>
                    {e.decision}
                  </span>
                </td>
                <td className="clip">
                  <code>
                    {e.method ? `${e.method} ` : ""}
                    {e.host}:{e.port}
                    {e.path ?? ""}
                  </code>
                </td>
                <td className="clip">{e.reason}</td>
                <td>
                  {bytes(e.bytes_out)} / {bytes(e.bytes_in)}
                </td>
                <td>
                  {e.run_id ? <Link href={`/agents/${agentId}/runs/${e.run_id}`}>{e.run_id}</Link> : "—"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pages.hasNextPage && (
        <Action
          type="button"
          className="secondary"
          onClick={() => void pages.fetchNextPage()}
          busy={pages.isFetchingNextPage}
          busyLabel="Loading…"
        >
          Older
        </Action>
      )}
    </section>
  );
}
