// The organisation page's areas: each a name and its folders, who holds it, its revisions; an
// owner or admin defines, changes and deletes them.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Area, Member } from "warren/sdk";
import { keys, warren } from "../api";
import { Action, Empty, ErrorBox, Loading, when } from "../ui";

/** Folders as typed: one a line or comma-separated. */
const foldersOf = (text: string): string[] =>
  text
    .split(/[\n,]/)
    .map((f) => f.trim())
    .filter((f) => f !== "");

export function AreasSection({
  orgId,
  manage,
  members,
}: {
  orgId: string;
  manage: boolean;
  members: Member[];
}) {
  const areas = useQuery({
    queryKey: keys.areas(orgId),
    queryFn: () => warren.orgs.areas(orgId).then((l) => l.items),
  });
  const qc = useQueryClient();
  const [open, setOpen] = useState<string | null>(null);
  const remove = useMutation({
    mutationFn: (name: string) => warren.orgs.deleteArea(orgId, name),
    onSettled: () => qc.invalidateQueries({ queryKey: keys.areas(orgId) }),
  });
  return (
    <>
      <h2>Areas</h2>
      <p className="sub">
        An area is a named set of folders of an agent&apos;s home. A member who holds areas sees only their
        folders, and the turns of the conversations they start have only those folders on disk.
      </p>
      <ErrorBox error={areas.error} />
      {areas.isPending ? (
        <Loading rows={1} />
      ) : areas.data?.length === 0 ? (
        <Empty>No areas yet: every member sees the whole home their role allows.</Empty>
      ) : (
        <table data-testid="areas">
          <thead>
            <tr>
              <th>Area</th>
              <th>Folders</th>
              <th>Held by</th>
              <th>Revision</th>
            </tr>
          </thead>
          <tbody>
            {areas.data?.map((a) => (
              <tr key={a.name} data-testid={`area-${a.name}`}>
                <td>{a.name}</td>
                <td>
                  {a.folders.map((f) => (
                    <code key={f}>{f}/ </code>
                  ))}
                </td>
                <td>
                  {members
                    .filter((m) => m.areas.includes(a.name))
                    .map((m) => m.email)
                    .join(", ") || "nobody"}
                </td>
                <td>
                  <button
                    type="button"
                    className="link"
                    onClick={() => setOpen(open === a.name ? null : a.name)}
                  >
                    {a.revision} (history)
                  </button>
                  {manage && (
                    <button
                      type="button"
                      className="link"
                      aria-label={`delete area ${a.name}`}
                      onClick={() => remove.mutate(a.name)}
                    >
                      delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorBox error={remove.error} />
      {open && <Revisions orgId={orgId} name={open} />}
      {manage && <AreaForm orgId={orgId} areas={areas.data ?? []} />}
    </>
  );
}

function Revisions({ orgId, name }: { orgId: string; name: string }) {
  const revisions = useQuery({
    queryKey: [...keys.areas(orgId), name, "revisions"],
    queryFn: () => warren.orgs.areaRevisions(orgId, name).then((l) => l.items),
  });
  return (
    <div data-testid="area-revisions">
      <h3>Revisions of {name}</h3>
      <ErrorBox error={revisions.error} />
      <ol>
        {revisions.data?.map((r) => (
          <li key={r.revision}>
            {r.revision}: {r.folders ? r.folders.join(", ") : "deleted"} · {r.by} · {when(r.at)}
          </li>
        ))}
      </ol>
    </div>
  );
}

function AreaForm({ orgId, areas }: { orgId: string; areas: Area[] }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [folders, setFolders] = useState("");
  const save = useMutation({
    mutationFn: () => warren.orgs.putArea(orgId, name, foldersOf(folders)),
    onSuccess: async () => {
      setName("");
      setFolders("");
      await qc.invalidateQueries({ queryKey: keys.areas(orgId) });
    },
  });
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      <label>
        Area name
        <input
          name="area_name"
          value={name}
          list="area-names"
          onChange={(e) => {
            setName(e.target.value);
            const known = areas.find((a) => a.name === e.target.value);
            if (known) setFolders(known.folders.join(", "));
          }}
          required
        />
      </label>
      <datalist id="area-names">
        {areas.map((a) => (
          <option key={a.name} value={a.name} />
        ))}
      </datalist>
      <label>
        Folders (comma-separated, relative to the home)
        <input name="area_folders" value={folders} onChange={(e) => setFolders(e.target.value)} required />
      </label>
      <Action type="submit" busy={save.isPending} busyLabel="Saving…">
        Save area
      </Action>
      <ErrorBox error={save.error} />
    </form>
  );
}
