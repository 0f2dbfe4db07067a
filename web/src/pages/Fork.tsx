// The Fork button of a message: a new conversation with the thread up to that message (and,
// for a branch conversation, a branch holding its uncommitted work), opened at once.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { keys, warren } from "../api";
import { navigate } from "../router";
import { Action, ErrorBox } from "../ui";

export function ForkButton({
  agentId,
  conversationId,
  messageId,
}: {
  agentId: string;
  conversationId: string;
  messageId: string;
}) {
  const qc = useQueryClient();
  const fork = useMutation({
    mutationFn: () => warren.conversations.fork(conversationId, { at_message: messageId }),
    onSuccess: async (c) => {
      await qc.invalidateQueries({ queryKey: keys.conversations(agentId) });
      navigate(`/agents/${agentId}/conversations/${c.id}`);
    },
  });
  return (
    <span className="fork">
      <Action
        type="button"
        className="secondary"
        data-testid="fork"
        title="A new conversation with the thread up to this message, and its branch's uncommitted work"
        onClick={() => fork.mutate()}
        busy={fork.isPending}
        busyLabel="Forking…"
      >
        Fork
      </Action>
      <ErrorBox error={fork.error} />
    </span>
  );
}
