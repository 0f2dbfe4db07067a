// A conversation's Changes: what its branch changed against its base (files and the patch),
// and Land for the owners and admins.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { Conversation } from "warren/sdk";
import { keys, useCan, warren } from "../api";
import { Action, ErrorBox, Loading } from "../ui";

export function Changes({ conversation: c }: { conversation: Conversation }) {
  const can = useCan(c.org_id);
  const qc = useQueryClient();
  const diff = useQuery({
    queryKey: keys.diff(c.id),
    queryFn: () => warren.conversations.diff(c.id),
    refetchInterval: 5000,
  });
  const land = useMutation({
    mutationFn: () => warren.conversations.land(c.id),
    onSettled: () => qc.invalidateQueries({ queryKey: keys.diff(c.id) }),
  });
  const d = diff.data;
  return (
    <details className="changes" data-testid="changes" open>
      <summary>
        Changes on <code>{c.branch}</code> (from <code>{c.base}</code>)
        {d ? ` · ${d.ahead} ahead, ${d.behind} behind` : ""}
      </summary>
      <ErrorBox error={diff.error} />
      {diff.isPending ? (
        <Loading rows={1} />
      ) : d ? (
        <>
          <table data-testid="changed-files">
            <thead>
              <tr>
                <th>File</th>
                <th>Change</th>
                <th>+</th>
                <th>−</th>
              </tr>
            </thead>
            <tbody>
              {d.files.map((f) => (
                <tr key={f.path}>
                  <td>
                    <code>{f.path}</code>
                  </td>
                  <td>{f.status}</td>
                  <td>{f.additions}</td>
                  <td>{f.deletions}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <pre className="patch" data-testid="patch">
            {d.patch || "(no changes yet)"}
          </pre>
        </>
      ) : null}
      {can.write && (
        <Action type="button" onClick={() => land.mutate()} busy={land.isPending} busyLabel="Landing…">
          Land into {c.base}
        </Action>
      )}
      {land.data && (
        <p role="status" data-testid="landed">
          Landed as <code>{land.data.commit.slice(0, 12)}</code>.
        </p>
      )}
      <ErrorBox error={land.error} />
    </details>
  );
}
