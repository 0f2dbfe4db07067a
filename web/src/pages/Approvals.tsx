// Tool calls waiting for a person's decision: the organisation's (on its page) and a run's (on
// the run's page). Each shows the exact call (tool, arguments, the policy version that asked,
// the arguments' SHA-256); Allow and Deny send that digest, so a decision never lands on
// another call: one that is no longer waiting, or whose arguments changed, is 409 approval.stale.
// An egress approval (a host a run asked to reach) may also be allowed with its host:port
// added to the agent's allow list, as a new version by the decider (add_to_policy).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Approval } from "warren/sdk";
import { describeError, keys, warren, type Can } from "../api";
import { Link } from "../router";
import { Action, Empty, ErrorBox, Loading, StatusBadge, when } from "../ui";
import "../polish.css";
import { SecretRequestCard } from "./SecretRequest";

const approvalKeys = {
  org: (org: string) => ["approvals", "org", org] as const,
  run: (run: string) => ["approvals", "run", run] as const,
};

function ApprovalCard({
  a,
  canDecide,
  onDecided,
  onStale,
}: {
  a: Approval;
  canDecide: boolean;
  onDecided: () => void;
  onStale: (err: unknown) => void;
}) {
  const [message, setMessage] = useState("");
  // "keep": allow an egress approval and add its host:port to the agent's allow list
  const decide = useMutation({
    mutationFn: (choice: "allow" | "deny" | "keep") =>
      warren.approvals.decide(a.id, {
        decision: choice === "deny" ? "deny" : "allow",
        args_sha256: a.args_sha256,
        ...(choice === "keep" ? { add_to_policy: true } : {}),
        ...(message.trim() ? { message: message.trim() } : {}),
      }),
    onSuccess: onDecided,
    // a stale decision is said above the list, which is read again (this call may leave it)
    onError: (err) => {
      if (describeError(err).code === "approval.stale") onStale(err);
    },
  });
  const stale = decide.error !== null && describeError(decide.error).code === "approval.stale";
  // the agent that asked, by its name (its id when it cannot be read)
  const agent = useQuery({ queryKey: keys.agent(a.agent_id), queryFn: () => warren.agents.get(a.agent_id) });
  const agentName = agent.data?.name ?? a.agent_id;
  return (
    <article className="card approval" data-testid="approval" aria-label={`approval ${a.id}`}>
      <h3>
        <code>{a.tool}</code> <StatusBadge status={a.status} />
      </h3>
      <p className="sub" data-testid="approval-agent">
        asked by agent{" "}
        <Link href={`/agents/${a.agent_id}`} className="agent-name">
          {agentName}
        </Link>
      </p>
      <dl>
        <dt>Run</dt>
        <dd>
          <Link href={`/agents/${a.agent_id}/runs/${a.run_id}`}>{a.run_id}</Link>
        </dd>
        <dt>Call</dt>
        <dd>
          <code>{a.tool_call_id}</code>
        </dd>
        <dt>Policy version</dt>
        <dd data-testid="policy-version">{a.policy_version ?? "—"}</dd>
        <dt>SHA-256</dt>
        <dd>
          <code data-testid="sha256">{a.args_sha256}</code>
        </dd>
        <dt>Asked</dt>
        <dd>{when(a.created_at)}</dd>
        <dt>Decided by</dt>
        <dd data-testid="deciders">
          {a.deciders.length > 0
            ? `${a.deciders.join(", ")} (and owners, admins)`
            : "owners, admins, editors without areas"}
          {a.status === "waiting" && a.may_decide ? " · yours to decide" : ""}
        </dd>
        {a.status !== "waiting" && (
          <>
            <dt>Decided</dt>
            <dd>
              {a.decided_by ?? "—"}, {when(a.decided_at)}
              {a.message ? `: “${a.message}”` : ""}
            </dd>
          </>
        )}
      </dl>
      <pre className="env" data-testid="arguments">
        {JSON.stringify(a.arguments, null, 2)}
      </pre>
      {a.status === "waiting" && canDecide && (
        <form
          className="inline"
          aria-label={`decide ${a.id}`}
          onSubmit={(e) => {
            e.preventDefault();
            decide.mutate("deny");
          }}
        >
          <label className="grow">
            Message (a denial's is the model's answer)
            <input
              name="message"
              value={message}
              onChange={(e) => setMessage(e.target.value)}
              maxLength={4096}
            />
          </label>
          <span className="decide">
            <Action
              type="button"
              className="allow"
              onClick={() => decide.mutate("allow")}
              busy={decide.isPending && decide.variables === "allow"}
              disabled={decide.isPending}
              aria-label={`Allow: let ${agentName} call ${a.tool}`}
            >
              ✓ Allow
            </Action>
            {a.tool === "egress" && (
              <Action
                type="button"
                className="allow"
                onClick={() => decide.mutate("keep")}
                busy={decide.isPending && decide.variables === "keep"}
                disabled={decide.isPending}
                aria-label={`Allow and add to ${agentName}'s allow list`}
              >
                ✓ Allow and add to the policy
              </Action>
            )}
            <Action
              type="submit"
              className="deny"
              busy={decide.isPending && decide.variables === "deny"}
              disabled={decide.isPending}
              aria-label={`Deny: refuse ${agentName} the call of ${a.tool}`}
            >
              ✕ Deny
            </Action>
          </span>
        </form>
      )}
      {!stale && <ErrorBox error={decide.error} />}
    </article>
  );
}

function ApprovalList({
  items,
  can,
  onDecided,
  empty,
}: {
  items: Approval[];
  can: Can;
  onDecided: () => void;
  empty: string;
}) {
  const [stale, setStale] = useState<{ tool: string; sha: string; err: unknown } | null>(null);
  return (
    <>
      {stale && (
        <div data-testid="stale">
          <ErrorBox error={stale.err} />
          <p className="warn">
            Your decision on <code>{stale.tool}</code> (SHA-256 <code>{stale.sha.slice(0, 12)}…</code>) was
            refused: the call it named is no longer the one waiting, or its arguments changed. Nothing was
            decided by it. The list below is read again: decide on what it shows now.{" "}
            <button type="button" className="link" onClick={() => setStale(null)}>
              Dismiss
            </button>
          </p>
        </div>
      )}
      {items.length === 0 ? (
        <Empty>{empty}</Empty>
      ) : (
        <div className="cards" data-testid="approvals">
          {items.map((a) =>
            a.tool === "secret_request" ? (
              <SecretRequestCard
                key={a.id}
                a={a}
                canAnswer={a.may_decide ?? can.write}
                onAnswered={onDecided}
              />
            ) : (
              <ApprovalCard
                key={a.id}
                a={a}
                canDecide={a.may_decide ?? can.write}
                onDecided={onDecided}
                onStale={(err) => {
                  setStale({ tool: a.tool, sha: a.args_sha256, err });
                  onDecided();
                }}
              />
            ),
          )}
        </div>
      )}
    </>
  );
}

/** The organisation's waiting approvals, read again every few seconds. */
export function OrgApprovals({ orgId, can }: { orgId: string; can: Can }) {
  const qc = useQueryClient();
  const q = useQuery({
    queryKey: approvalKeys.org(orgId),
    queryFn: () => warren.approvals.ofOrg(orgId, "waiting").then((l) => l.items),
    refetchInterval: 3000,
  });
  return (
    <section aria-label="waiting approvals">
      <h2>Waiting approvals</h2>
      <ErrorBox error={q.error} />
      {q.isPending ? (
        <Loading rows={1} />
      ) : (
        <ApprovalList
          items={q.data ?? []}
          can={can}
          onDecided={() => void qc.invalidateQueries({ queryKey: approvalKeys.org(orgId) })}
          empty="No tool call waits for a decision."
        />
      )}
    </section>
  );
}

/** A run's approvals: each call that asked a person, and what was decided. */
export function RunApprovals({ runId, can, live }: { runId: string; can: Can; live: boolean }) {
  const qc = useQueryClient();
  const q = useQuery({
    queryKey: approvalKeys.run(runId),
    queryFn: () => warren.approvals.ofRun(runId).then((l) => l.items),
    refetchInterval: live ? 1500 : false,
  });
  if (q.data?.length === 0 && !live) return null;
  return (
    <section aria-label="approvals">
      <h2>Approvals</h2>
      <ErrorBox error={q.error} />
      {q.isPending ? (
        <Loading rows={1} />
      ) : (
        <ApprovalList
          items={q.data ?? []}
          can={can}
          onDecided={() => void qc.invalidateQueries({ queryKey: approvalKeys.run(runId) })}
          empty="No tool call of this run asked for a decision."
        />
      )}
    </section>
  );
}
