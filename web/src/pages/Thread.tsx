// `/agents/:id/conversations/:conversation`: one thread. The messages, each person's message
// followed by the agent's turn: its tool calls folded under it, its answer streaming as the
// model writes it (the conversation's event stream), its end; each message can be forked from.
// A composer, and close.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import type { ConversationMessage } from "warren/sdk";
import { keys, useCan, usePersonas, warren } from "../api";
import { Link, useTitle } from "../router";
import { useEventStream, type LiveEvent } from "../stream";
import { Changes } from "./Changes";
import { ForkButton } from "./Fork";
import { WaitingSecretRequests } from "./SecretRequest";
import { Markdown } from "../markdown";
import { StopTurn } from "../stop";
import { Action, Empty, ErrorBox, Loading, Spinner, StatusBadge, when } from "../ui";

const record = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
const str = (v: unknown): string =>
  typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v);

/** What the stream says of one turn. */
interface Turn {
  started: boolean;
  /** The model's text as it streams, one entry per model step, in order (a tool call comes between two). */
  steps: { step: number; text: string }[];
  tools: LiveEvent[];
  exit: { status: string; reason: string } | undefined;
  interrupted: string | undefined;
}

function turnsOf(events: readonly LiveEvent[]): Map<string, Turn> {
  const turns = new Map<string, Turn>();
  for (const e of events) {
    if (!e.run_id) continue;
    let t = turns.get(e.run_id);
    if (!t)
      turns.set(
        e.run_id,
        (t = { started: false, steps: [], tools: [], exit: undefined, interrupted: undefined }),
      );
    const d = record(e.data);
    if (e.type === "started") t.started = true;
    else if (e.type === "output" && d.stream === "text") {
      // each model step's text apart: pieces of two steps are never glued together
      const step = typeof d.step === "number" ? d.step : 0;
      const last = t.steps.at(-1);
      if (last && last.step === step) last.text += str(d.data);
      else t.steps.push({ step, text: str(d.data) });
    } else if (e.type === "tool_call" || e.type === "approval") t.tools.push(e);
    else if (e.type === "interrupted") t.interrupted = str(d.reason);
    else if (e.type === "exit") t.exit = { status: str(d.status), reason: str(d.reason) };
    // the turn could not start (the home full, the organisation at its cap, ...)
    else if (e.type === "refused") t.exit = { status: "refused", reason: str(d.reason) };
  }
  return turns;
}

/** The messages: those read, then those the stream brought since, each once. */
function merged(read: readonly ConversationMessage[], events: readonly LiveEvent[]): ConversationMessage[] {
  const out = [...read];
  const seen = new Set(read.map((m) => m.id));
  for (const e of events) {
    if (e.type !== "message") continue;
    const m = e.data as ConversationMessage;
    if (typeof m?.id !== "string" || seen.has(m.id)) continue;
    seen.add(m.id);
    out.push(m);
  }
  return out;
}

/** Each person's message followed by the answer of its turn (a queued message is stored before the answer before it). */
function byTurn(thread: readonly ConversationMessage[]): ConversationMessage[] {
  const asked = new Set(thread.filter((m) => m.role === "user" && m.run_id).map((m) => m.run_id));
  const answers = new Map<string, ConversationMessage>();
  for (const m of thread) if (m.role === "agent" && m.run_id && asked.has(m.run_id)) answers.set(m.run_id, m);
  const out: ConversationMessage[] = [];
  for (const m of thread) {
    if (m.role === "agent" && m.run_id && answers.get(m.run_id) === m) continue;
    out.push(m);
    const answer = m.role === "user" && m.run_id ? answers.get(m.run_id) : undefined;
    if (answer) out.push(answer);
  }
  return out;
}

/** The text of model steps, each apart. */
function Steps({ steps }: { steps: readonly { step: number; text: string }[] }) {
  return (
    <>
      {steps
        .filter((s) => s.text.trim() !== "")
        .map((s) => (
          <div key={s.step} className="step" data-testid="step" data-step={s.step}>
            {s.text}
          </div>
        ))}
    </>
  );
}

function ToolCalls({ tools }: { tools: LiveEvent[] }) {
  if (tools.length === 0) return null;
  return (
    <details className="tools" data-testid="tool-calls">
      <summary>
        {tools.length} tool call{tools.length === 1 ? "" : "s"}
      </summary>
      <ol>
        {tools.map((e) => {
          const d = record(e.data);
          const decision = e.type === "approval" ? "waiting for a decision" : str(d.decision) || "called";
          return (
            <li key={e.id} data-testid="tool-call">
              <b>{str(d.tool) || str(d.name)}</b> <span className={`decision d-${decision}`}>{decision}</span>{" "}
              <code className="clip">{str(d.arguments ?? d.input)}</code>
              {d.error ? <span className="bad"> {str(d.error)}</span> : null}
            </li>
          );
        })}
      </ol>
    </details>
  );
}

export function ThreadPage({ agentId, conversationId }: { agentId: string; conversationId: string }) {
  const qc = useQueryClient();
  const agent = useQuery({ queryKey: keys.agent(agentId), queryFn: () => warren.agents.get(agentId) });
  const can = useCan(agent.data?.org_id);
  const conversation = useQuery({
    queryKey: keys.conversation(conversationId),
    queryFn: () => warren.conversations.get(conversationId),
  });
  const personas = usePersonas(agentId);
  const messages = useQuery({
    queryKey: keys.messages(conversationId),
    queryFn: () => warren.conversations.messages(conversationId).then((l) => l.items),
  });
  const stream = useEventStream(
    `/api/conversations/${encodeURIComponent(conversationId)}/events`,
    conversation.data !== undefined,
  );
  const [text, setText] = useState("");
  const send = useMutation({
    mutationFn: (t: string) => warren.conversations.send(conversationId, t),
    onSuccess: () => setText(""),
  });
  const close = useMutation({
    mutationFn: () => warren.conversations.close(conversationId),
    onSuccess: async (c) => {
      qc.setQueryData(keys.conversation(conversationId), c);
      await qc.invalidateQueries({ queryKey: keys.conversations(agentId) });
    },
  });
  const c = conversation.data;
  useTitle(c?.title || "Conversation");
  const ended = stream.events.filter((e) => e.type === "exit").length;
  useEffect(() => {
    if (ended > 0) void qc.invalidateQueries({ queryKey: keys.conversations(agentId) });
  }, [ended, agentId, qc]);

  const turns = turnsOf(stream.events);
  const thread = byTurn(merged(messages.data ?? [], stream.events));
  const answered = new Set(thread.filter((m) => m.role === "agent").map((m) => m.run_id));
  // a fork's first messages are copies: a turn of the source left out of it is no turn going on here
  const copied = Number(record(stream.events.find((e) => e.type === "forked")?.data).messages ?? 0);
  const settled = new Set((messages.data ?? []).slice(0, copied).map((m) => m.id));
  const open = c?.status === "open";

  return (
    <section>
      <p className="crumbs">
        <Link href={`/agents/${agentId}`}>{agent.data?.name ?? "agent"}</Link> /{" "}
        <Link href={`/agents/${agentId}/conversations`}>conversations</Link> /
      </p>
      <h1>
        {c ? c.title || "Conversation" : "…"} {c && <StatusBadge status={c.status} />}
      </h1>
      <ErrorBox error={conversation.error ?? messages.error} />
      {!c ? (
        <Loading rows={4} />
      ) : (
        <>
          <p className="sub">
            <code>{c.id}</code> · started by {c.started_by.name || c.started_by.email} {when(c.created_at)}
            {c.persona_id ? (
              <>
                {" "}
                · persona{" "}
                {personas.data?.find((p) => p.id === c.persona_id)?.name ?? <code>{c.persona_id}</code>}
              </>
            ) : null}
            {typeof c.spec_version === "number" && (
              <span
                data-testid="conversation-version"
                title="the canary took it at its start: kept for its life"
              >
                {" "}
                · version {c.spec_version} (canary)
              </span>
            )}
            {" · "}
            <span data-testid="stream-state">{stream.state === "open" ? "live" : stream.state}</span>
          </p>
          {c.branch && <Changes conversation={c} />}
          {thread.length === 0 ? (
            <Empty>No messages yet. Write the first below.</Empty>
          ) : (
            <ol className="thread" data-testid="thread">
              {thread.map((m) => {
                const t = m.run_id ? turns.get(m.run_id) : undefined;
                if (m.role === "agent")
                  return (
                    <li key={m.id} className="msg agent" data-testid="agent-message">
                      <div className="who">
                        agent · {when(m.at)}
                        {can.converse && (
                          <ForkButton agentId={agentId} conversationId={conversationId} messageId={m.id} />
                        )}
                      </div>
                      {t && <ToolCalls tools={t.tools} />}
                      {/* what the model said before its last step stays as it streamed; the last step is the answer */}
                      {t && <Steps steps={t.steps.slice(0, -1)} />}
                      <Markdown className="text" text={m.text} testId="answer" />
                    </li>
                  );
                const user = (
                  <li key={m.id} className="msg user">
                    <div className="who">
                      {m.author?.name || m.author?.email || "someone"} · {when(m.at)}
                      {can.converse && (
                        <ForkButton agentId={agentId} conversationId={conversationId} messageId={m.id} />
                      )}
                    </div>
                    <div className="text" data-testid="user-message">
                      {m.text}
                    </div>
                  </li>
                );
                if (!m.run_id || answered.has(m.run_id) || settled.has(m.id)) return user;
                // the turn going on (or ended without an answer): its calls, its text as it streams
                return [
                  user,
                  <li key={`${m.id}-turn`} className="msg agent live" data-testid="turn-live">
                    <div className="who">agent</div>
                    {t && <ToolCalls tools={t.tools} />}
                    {t && <WaitingSecretRequests events={t.tools} canAnswer={can.write} />}
                    {t && t.steps.length > 0 ? (
                      <div data-testid="streamed">
                        <Steps steps={t.steps} />
                      </div>
                    ) : null}
                    {t?.interrupted ? (
                      <p className="bad">
                        Interrupted ({t.interrupted}): the next message continues from here.
                      </p>
                    ) : t?.exit ? (
                      t.exit.status === "succeeded" ? null : (
                        <p className="bad">
                          The turn ended <StatusBadge status={t.exit.status} />
                          {t.exit.reason ? `: ${t.exit.reason}` : ""}
                        </p>
                      )
                    ) : (
                      <>
                        <Spinner label={t?.started ? "The agent is working…" : "Waiting for its turn…"} />
                        {can.write && m.run_id && <StopTurn runId={m.run_id} />}
                      </>
                    )}
                  </li>,
                ];
              })}
            </ol>
          )}
          {can.converse && open && (
            <form
              className="composer"
              aria-label="message"
              onSubmit={(e) => {
                e.preventDefault();
                if (text.trim()) send.mutate(text);
              }}
            >
              <label className="grow">
                Message
                <textarea
                  name="conversation_message"
                  rows={3}
                  value={text}
                  onChange={(e) => setText(e.target.value)}
                  onKeyDown={(e) => {
                    // Enter sends, Shift+Enter is a new line
                    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
                      e.preventDefault();
                      if (text.trim()) send.mutate(text);
                    }
                  }}
                  required
                />
              </label>
              <Action type="submit" busy={send.isPending} busyLabel="Sending…">
                Send
              </Action>
            </form>
          )}
          <ErrorBox error={send.error} />
          {open ? (
            can.write && (
              <Action
                type="button"
                className="secondary"
                onClick={() => close.mutate()}
                busy={close.isPending}
                busyLabel="Closing…"
              >
                Close conversation
              </Action>
            )
          ) : (
            <Empty>
              This conversation is closed: it takes no more messages. Start a new one from the list.
            </Empty>
          )}
          <ErrorBox error={close.error} />
        </>
      )}
    </section>
  );
}
