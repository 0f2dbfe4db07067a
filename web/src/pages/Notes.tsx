// The Notes page: an organisation's notes and agents' memories as a tree of display paths, a
// viewer and an editor of the current Markdown, and a memory's revisions with a diff of the
// chosen one against the current text (only operators see earlier revisions).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useCan, warren } from "../api";
import { lineDiff } from "../diff";
import { Link, navigate, useLocation, useTitle } from "../router";
import { OrgCrumb } from "../crumbs";
import { Markdown } from "../markdown";
import { Action, bytes, Empty, ErrorBox, Loading, when } from "../ui";

interface Tree {
  [segment: string]: Tree | string;
}

/** The paths as nested folders; a leaf holds its full path. */
function treeOf(paths: string[]): Tree {
  const root: Tree = {};
  for (const p of paths) {
    const parts = p.split("/");
    let at = root;
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1) at[part] = p;
      else at = (at[part] ??= {}) as Tree;
    }
  }
  return root;
}

function TreeView({ tree, open, onOpen }: { tree: Tree; open: string; onOpen: (p: string) => void }) {
  return (
    <ul className="tree">
      {Object.entries(tree)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, v]) => (
          <li key={name}>
            {typeof v === "string" ? (
              <button
                type="button"
                className="link"
                aria-current={v === open ? "true" : undefined}
                onClick={() => onOpen(v)}
              >
                {name}
              </button>
            ) : (
              <>
                <span className="folder">{name}/</span>
                <TreeView tree={v} open={open} onOpen={onOpen} />
              </>
            )}
          </li>
        ))}
    </ul>
  );
}

function Revisions({ orgId, path, current }: { orgId: string; path: string; current: string }) {
  const [chosen, setChosen] = useState<number | null>(null);
  const revs = useQuery({
    queryKey: ["revisions", orgId, path],
    queryFn: () => warren.artifacts(orgId).revisions(path),
  });
  const old = useQuery({
    queryKey: ["revision", orgId, path, chosen],
    enabled: chosen !== null,
    queryFn: () => warren.artifacts(orgId).revision(path, chosen ?? 1),
  });
  return (
    <div data-testid="revisions">
      <h3>Revisions</h3>
      <ErrorBox error={revs.error} />
      <ul className="revisions">
        {revs.data?.items.map((r) => (
          <li key={r.revision}>
            <button type="button" className="link" onClick={() => setChosen(r.revision)}>
              revision {r.revision}
            </button>{" "}
            by {r.by}, {when(r.at)}, {bytes(r.bytes)}
          </li>
        ))}
      </ul>
      {chosen !== null && (
        <div data-testid="diff">
          <h4>Revision {chosen} against the current text</h4>
          <ErrorBox error={old.error} />
          {old.data !== undefined && (
            <pre className="output diff">
              {lineDiff(old.data, current).map((l, i) => (
                <div key={i} className={`d-${l.op}`}>
                  {l.op === "add" ? "+ " : l.op === "del" ? "- " : "  "}
                  {l.text}
                </div>
              ))}
            </pre>
          )}
        </div>
      )}
    </div>
  );
}

function Viewer({ orgId, path, canWrite }: { orgId: string; path: string; canWrite: boolean }) {
  const qc = useQueryClient();
  const [draft, setDraft] = useState<string | null>(null);
  const text = useQuery({
    queryKey: ["artifact", orgId, path],
    queryFn: () => warren.artifacts(orgId).read(path),
  });
  const save = useMutation({
    mutationFn: (t: string) => warren.artifacts(orgId).write(path, t),
    onSuccess: async () => {
      setDraft(null);
      await qc.invalidateQueries({ queryKey: ["artifact", orgId, path] });
      await qc.invalidateQueries({ queryKey: ["revisions", orgId, path] });
      await qc.invalidateQueries({ queryKey: ["artifacts", orgId] });
    },
  });
  const memory = path.endsWith("/memory.md") && path.startsWith("agents/");
  return (
    <div className="viewer" data-testid="note-view">
      <h2>
        {path}{" "}
        {canWrite && draft === null && text.data !== undefined && (
          <button type="button" className="secondary" onClick={() => setDraft(text.data ?? "")}>
            Edit
          </button>
        )}
      </h2>
      <ErrorBox error={text.error} />
      {draft !== null ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate(draft);
          }}
        >
          <label>
            Markdown
            <textarea name="content" rows={14} value={draft} onChange={(e) => setDraft(e.target.value)} />
          </label>
          <Action type="submit" busy={save.isPending} busyLabel="Saving…">
            Save
          </Action>{" "}
          <button type="button" className="secondary" onClick={() => setDraft(null)}>
            Cancel
          </button>
          <ErrorBox error={save.error} />
        </form>
      ) : text.isPending ? (
        <Loading rows={3} />
      ) : (
        <Markdown text={text.data ?? ""} className="note" testId="note-text" />
      )}
      {memory && text.data !== undefined && <Revisions orgId={orgId} path={path} current={text.data} />}
    </div>
  );
}

export function NotesPage({ orgId }: { orgId: string }) {
  useTitle("Notes");
  const can = useCan(orgId);
  const { query } = useLocation();
  const open = query.get("path") ?? "";
  const [newPath, setNewPath] = useState("");
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: ["artifacts", orgId],
    queryFn: () => warren.artifacts(orgId).list(),
  });
  const create = useMutation({
    mutationFn: (p: string) =>
      warren.artifacts(orgId).write(p, `# ${p.split("/").pop()?.replace(/\.md$/, "")}\n`),
    onSuccess: async (w) => {
      setNewPath("");
      await qc.invalidateQueries({ queryKey: ["artifacts", orgId] });
      go(w.path);
    },
  });
  const go = (p: string) => navigate(`/orgs/${orgId}/notes?path=${encodeURIComponent(p)}`);
  const notes = list.data?.items.filter((i) => i.kind === "note" || i.kind === "memory") ?? [];
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> / <OrgCrumb orgId={orgId} /> /
      </p>
      <h1>Notes</h1>
      <p className="sub">
        Notes and memories of the organisation, its guilds and its agents; they outlive the agents&apos;
        homes. <Link href={`/orgs/${orgId}/tables`}>Tables</Link>
      </p>
      {can.write && (
        <form
          className="inline"
          onSubmit={(e) => {
            e.preventDefault();
            if (newPath) create.mutate(newPath);
          }}
        >
          <label className="grow">
            New note at
            <input
              name="path"
              placeholder="handbook.md, guilds/<guild id>/brief.md, agents/<agent id>/notes/plan.md"
              value={newPath}
              onChange={(e) => setNewPath(e.target.value)}
            />
          </label>
          <Action type="submit" busy={create.isPending} busyLabel="Creating…">
            Create
          </Action>
          <ErrorBox error={create.error} />
        </form>
      )}
      <ErrorBox error={list.error} />
      <div className="split">
        <nav aria-label="notes" data-testid="notes-tree">
          {list.isPending ? (
            <Loading rows={4} />
          ) : notes.length === 0 ? (
            <Empty>No notes yet.</Empty>
          ) : (
            <TreeView tree={treeOf(notes.map((n) => n.path))} open={open} onOpen={go} />
          )}
        </nav>
        {open ? (
          <Viewer key={open} orgId={orgId} path={open} canWrite={can.write} />
        ) : (
          <Empty>Choose a note to read it.</Empty>
        )}
      </div>
    </section>
  );
}
