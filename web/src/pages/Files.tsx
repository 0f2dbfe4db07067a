// The Files tab: browse the home (folders by the host-side rules), view and download a file,
// upload one (a write by the same rules: no link on the way, folders made one at a time).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { keys, warren, type Can } from "../api";
import { navigate, useLocation } from "../router";
import { Action, bytes, Empty, ErrorBox, Loading, when } from "../ui";

const VIEW_LIMIT = 256 * 1024;
const join = (dir: string, name: string) => (dir ? `${dir}/${name}` : name);

export function FilesTab({ agentId, can }: { agentId: string; can: Can }) {
  const qc = useQueryClient();
  const { query } = useLocation();
  const dir = query.get("path") ?? "";
  const [viewing, setViewing] = useState<string | null>(null);
  const listing = useQuery({
    queryKey: keys.folder(agentId, dir),
    queryFn: () => warren.agent(agentId).files.list(dir),
    placeholderData: (prev) => prev,
  });
  const view = useQuery({
    queryKey: ["file", agentId, viewing],
    enabled: viewing !== null,
    queryFn: async () => {
      const data = await warren.agent(agentId).files.read(viewing ?? "");
      const shown = data.subarray(0, VIEW_LIMIT);
      try {
        return { text: new TextDecoder("utf-8", { fatal: true }).decode(shown), size: data.byteLength };
      } catch {
        return { text: null, size: data.byteLength };
      }
    },
  });
  const input = useRef<HTMLInputElement>(null);
  const upload = useMutation({
    mutationFn: async (file: File) => {
      const data = new Uint8Array(await file.arrayBuffer());
      await warren.agent(agentId).files.write(join(dir, file.name), data);
      return file.name;
    },
    onSuccess: async () => {
      if (input.current) input.current.value = "";
      await qc.invalidateQueries({ queryKey: keys.folder(agentId, dir) });
    },
  });
  const go = (path: string) => {
    setViewing(null);
    navigate(`/agents/${agentId}/files${path ? `?path=${encodeURIComponent(path)}` : ""}`);
  };
  const parts = dir ? dir.split("/") : [];
  const fileUrl = (p: string) =>
    `/api/agents/${encodeURIComponent(agentId)}/files/${p.split("/").map(encodeURIComponent).join("/")}`;

  return (
    <section>
      <nav className="crumbs" aria-label="folder">
        <button type="button" className="link" onClick={() => go("")}>
          home
        </button>
        {parts.map((p, i) => (
          <span key={i}>
            {" / "}
            <button type="button" className="link" onClick={() => go(parts.slice(0, i + 1).join("/"))}>
              {p}
            </button>
          </span>
        ))}
      </nav>
      {can.files && (
        <form className="inline" onSubmit={(e) => e.preventDefault()}>
          <label>
            Upload a file here
            <input
              ref={input}
              type="file"
              name="upload"
              onChange={(e) => {
                const f = e.target.files?.[0];
                if (f) upload.mutate(f);
              }}
            />
          </label>
          {upload.isPending && <Action busy busyLabel="Uploading…" />}
          {upload.isSuccess && <span role="status">Uploaded {upload.data}.</span>}
          <ErrorBox error={upload.error} />
        </form>
      )}
      <ErrorBox error={listing.error} />
      {listing.isPending ? (
        <Loading rows={4} />
      ) : listing.data?.entries.length === 0 ? (
        <Empty>
          This folder is empty. {can.files ? "Upload a file, or make some from a run or the terminal." : ""}
        </Empty>
      ) : (
        <table data-testid="files">
          <thead>
            <tr>
              <th>Name</th>
              <th>Size</th>
              <th>Changed</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {listing.data?.entries.map((e) => (
              <tr key={e.name}>
                <td>
                  {e.type === "folder" ? (
                    <button type="button" className="link" onClick={() => go(join(dir, e.name))}>
                      {e.name}/
                    </button>
                  ) : e.type === "file" ? (
                    <button type="button" className="link" onClick={() => setViewing(join(dir, e.name))}>
                      {e.name}
                    </button>
                  ) : (
                    <span title={`a ${e.type}: not opened from here`}>
                      {e.name} <small>({e.type})</small>
                    </span>
                  )}
                </td>
                <td>{e.type === "file" ? bytes(e.size_bytes) : ""}</td>
                <td>{when(e.modified_at)}</td>
                <td>
                  {e.type === "file" && (
                    <a href={fileUrl(join(dir, e.name))} download={e.name}>
                      Download
                    </a>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {listing.data?.truncated && <p className="sub">Only the first 1000 entries are shown.</p>}
      {viewing && (
        <div className="viewer" data-testid="file-view">
          <h2>
            {viewing}{" "}
            <button type="button" className="secondary" onClick={() => setViewing(null)}>
              Close
            </button>
          </h2>
          <ErrorBox error={view.error} />
          {view.isPending ? (
            <Loading rows={2} />
          ) : view.data?.text === null ? (
            <Empty>This file is not text ({bytes(view.data.size)}): download it to open it.</Empty>
          ) : (
            <pre className="output">{view.data?.text}</pre>
          )}
        </div>
      )}
    </section>
  );
}
