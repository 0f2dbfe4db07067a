// The Conversations tab: the agent's threads and a new one (as the agent, or as one of its
// personas; on a branch of a repository in the home when one is named). A thread is its own page (Thread.tsx).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { keys, usePersonas, warren, type Can } from "../api";
import { Link, navigate } from "../router";
import { Action, Empty, ErrorBox, Loading, StatusBadge, when } from "../ui";

export function ConversationsTab({ agentId, can }: { agentId: string; can: Can }) {
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: keys.conversations(agentId),
    queryFn: () =>
      warren
        .agent(agentId)
        .conversations.list()
        .then((l) => l.items),
  });
  const personas = usePersonas(agentId);
  const [title, setTitle] = useState("");
  const [persona, setPersona] = useState("");
  const [repo, setRepo] = useState("");
  const start = useMutation({
    mutationFn: () =>
      warren.agent(agentId).conversations.create({
        ...(title.trim() ? { title: title.trim() } : {}),
        ...(persona ? { persona_id: persona } : {}),
        ...(repo.trim() ? { repo: repo.trim() } : {}),
      }),
    onSuccess: async (c) => {
      qc.setQueryData(keys.conversation(c.id), c);
      await qc.invalidateQueries({ queryKey: keys.conversations(agentId) });
      navigate(`/agents/${agentId}/conversations/${c.id}`);
    },
  });
  const personaName = (id: string | null) =>
    id === null ? "—" : (personas.data?.find((p) => p.id === id)?.name ?? id);
  return (
    <section>
      {can.converse && (
        <form
          className="inline"
          aria-label="start a conversation"
          onSubmit={(e) => {
            e.preventDefault();
            start.mutate();
          }}
        >
          <label className="grow">
            Title
            <input
              name="conversation_title"
              value={title}
              onChange={(e) => setTitle(e.target.value)}
              placeholder="optional: what it is about"
              maxLength={200}
            />
          </label>
          <label>
            Repository
            <input
              name="conversation_repo"
              value={repo}
              onChange={(e) => setRepo(e.target.value)}
              placeholder="optional: a git folder in the home"
              title="a git repository folder in the agent's home: the conversation works on its own branch there, to diff and land"
              maxLength={500}
            />
          </label>
          <label>
            As
            <select name="conversation_persona" value={persona} onChange={(e) => setPersona(e.target.value)}>
              <option value="">the agent itself</option>
              {personas.data?.map((p) => (
                <option key={p.id} value={p.id}>
                  persona {p.name}
                </option>
              ))}
            </select>
          </label>
          <Action type="submit" busy={start.isPending} busyLabel="Starting…">
            Start conversation
          </Action>
          <ErrorBox error={start.error ?? personas.error} />
        </form>
      )}
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading />
      ) : list.data?.length === 0 ? (
        <Empty>
          No conversations yet.{" "}
          {can.converse
            ? "Start one above: each message is a turn of the agent that sees the whole thread so far."
            : "An editor can start one."}
        </Empty>
      ) : (
        <table data-testid="conversations">
          <thead>
            <tr>
              <th>Conversation</th>
              <th>Status</th>
              <th>Persona</th>
              <th>Started by</th>
              <th>Last message</th>
            </tr>
          </thead>
          <tbody>
            {list.data?.map((c) => (
              <tr key={c.id}>
                <td className="clip">
                  <Link href={`/agents/${agentId}/conversations/${c.id}`}>{c.title || c.id}</Link>
                </td>
                <td>
                  <StatusBadge status={c.status} />
                </td>
                <td>{personaName(c.persona_id)}</td>
                <td>{c.started_by.name || c.started_by.email}</td>
                <td>{when(c.last_message_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
