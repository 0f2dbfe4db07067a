// An agent's secret_request as a card: the name it asks for, and its description and reason,
// shown as the agent's own text (never as warren's or a person's word). A person allowed to
// write secrets types the value here: it goes to the secrets API (POST /api/approvals/:id/secret),
// becomes a secret granted to that agent, and never enters the conversation. Refuse is a
// denial the agent is told of.
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import type { Approval } from "warren/sdk";
import { warren } from "../api";
import { Action, ErrorBox, StatusBadge, when } from "../ui";
import type { LiveEvent } from "../stream";

const text = (v: unknown): string => (typeof v === "string" ? v : "");

export function SecretRequestCard({
  a,
  canAnswer,
  onAnswered,
}: {
  a: Approval;
  canAnswer: boolean;
  onAnswered?: () => void;
}) {
  const args = (typeof a.arguments === "object" && a.arguments !== null ? a.arguments : {}) as Record<
    string,
    unknown
  >;
  const name = text(args.name);
  const [value, setValue] = useState("");
  const [message, setMessage] = useState("");
  const give = useMutation({
    mutationFn: () => warren.approvals.secret(a.id, { value, args_sha256: a.args_sha256 }),
    onSuccess: () => {
      setValue("");
      onAnswered?.();
    },
  });
  const refuse = useMutation({
    mutationFn: () =>
      warren.approvals.decide(a.id, {
        decision: "deny",
        args_sha256: a.args_sha256,
        ...(message.trim() ? { message: message.trim() } : {}),
      }),
    onSuccess: onAnswered,
  });
  const busy = give.isPending || refuse.isPending;
  return (
    <article
      className="card approval secret-request"
      data-testid="secret-request"
      aria-label={`secret request ${name}`}
    >
      <h3>
        The agent asks for a secret: <code data-testid="secret-name">{name}</code>{" "}
        <StatusBadge status={a.status} />
      </h3>
      <p className="warn" data-testid="agents-own-text">
        The description and reason below are the agent&apos;s own words, not warren&apos;s and not a
        person&apos;s. Give a secret only if you know it should have it.
      </p>
      <dl>
        <dt>What it is (the agent says)</dt>
        <dd>
          <q data-testid="secret-description">{text(args.description)}</q>
        </dd>
        <dt>Why (the agent says)</dt>
        <dd>
          <q data-testid="secret-why">{text(args.why)}</q>
        </dd>
        <dt>Asked</dt>
        <dd>{when(a.created_at)}</dd>
      </dl>
      {a.status === "waiting" && canAnswer && (
        <form
          className="inline"
          aria-label={`answer the secret request ${name}`}
          onSubmit={(e) => {
            e.preventDefault();
            if (value !== "") give.mutate();
          }}
        >
          <label className="grow">
            Value (stored as the secret {name}, granted to this agent; never shown in the conversation)
            <input
              name="value"
              type="password"
              autoComplete="off"
              value={value}
              onChange={(e) => setValue(e.target.value)}
            />
          </label>
          <label className="grow">
            Message (with a refusal, told to the agent)
            <input
              name="message"
              value={message}
              onChange={(e) => setMessage(e.target.value)}
              maxLength={4096}
            />
          </label>
          <span className="decide">
            <Action type="submit" className="allow" busy={give.isPending} disabled={busy || value === ""}>
              Give secret
            </Action>
            <Action
              type="button"
              className="deny"
              busy={refuse.isPending}
              disabled={busy}
              onClick={() => refuse.mutate()}
            >
              Refuse
            </Action>
          </span>
        </form>
      )}
      <ErrorBox error={give.error ?? refuse.error} />
    </article>
  );
}

/** The secret requests of a turn still waiting, from its stream's approval events (the latest of each). */
export function WaitingSecretRequests({ events, canAnswer }: { events: LiveEvent[]; canAnswer: boolean }) {
  const latest = new Map<string, Approval>();
  for (const e of events) {
    if (e.type !== "approval") continue;
    const a = e.data as Approval;
    if (a && a.tool === "secret_request") latest.set(a.id, a);
  }
  const waiting = [...latest.values()].filter((a) => a.status === "waiting");
  if (waiting.length === 0) return null;
  return (
    <>
      {waiting.map((a) => (
        <SecretRequestCard key={a.id} a={a} canAnswer={canAnswer} />
      ))}
    </>
  );
}
