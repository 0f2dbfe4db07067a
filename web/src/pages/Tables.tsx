// The Tables page: an organisation's collections, each a table of its records (JSON objects,
// one column per field), and a form to put a record.
import { useMutation, useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useCan, warren } from "../api";
import { Link, navigate, useLocation, useTitle } from "../router";
import { OrgCrumb } from "../crumbs";
import { Action, Empty, ErrorBox, Loading } from "../ui";

const cell = (v: unknown) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));

function Collection({ orgId, name, canWrite }: { orgId: string; name: string; canWrite: boolean }) {
  const qc = useQueryClient();
  const [id, setId] = useState("");
  const [json, setJson] = useState("{}");
  const list = useQuery({
    queryKey: ["artifacts", orgId, `collections/${name}/`],
    queryFn: () => warren.artifacts(orgId).list(`collections/${name}/`),
  });
  const records = useQueries({
    queries: (list.data?.items ?? []).map((i) => ({
      queryKey: ["artifact", orgId, i.path, i.revision],
      queryFn: async () => ({
        id: i.path.slice(i.path.lastIndexOf("/") + 1),
        value: JSON.parse(await warren.artifacts(orgId).read(i.path)) as unknown,
      }),
    })),
  });
  // The table shows once every record is read, never a part of them (its columns are the union of
  // all records' fields, and a table that grew a column while read looked different each time).
  const reading = list.isPending || records.some((r) => r.isPending);
  const rows = records.flatMap((r) => (r.data ? [r.data] : []));
  const columns = [
    ...new Set(
      rows.flatMap((r) =>
        r.value && typeof r.value === "object" && !Array.isArray(r.value) ? Object.keys(r.value) : [],
      ),
    ),
  ];
  const put = useMutation({
    mutationFn: () => warren.artifacts(orgId).write(`collections/${name}/${id}`, json),
    onSuccess: async () => {
      setId("");
      setJson("{}");
      await qc.invalidateQueries({ queryKey: ["artifacts", orgId] });
    },
  });
  return (
    <div data-testid="collection">
      <h2>{name}</h2>
      <ErrorBox error={list.error ?? records.find((r) => r.error)?.error ?? null} />
      {reading ? (
        <Loading rows={3} />
      ) : rows.length === 0 ? (
        <Empty>This collection has no records.</Empty>
      ) : (
        <table data-testid="records">
          <thead>
            <tr>
              <th>id</th>
              {columns.map((c) => (
                <th key={c}>{c}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{r.id}</td>
                {columns.map((c) => (
                  <td key={c}>{cell((r.value as Record<string, unknown>)[c])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canWrite && (
        <form
          className="inline"
          onSubmit={(e) => {
            e.preventDefault();
            put.mutate();
          }}
        >
          <label>
            Record id
            <input name="id" value={id} onChange={(e) => setId(e.target.value)} />
          </label>
          <label className="grow">
            JSON
            <input name="json" value={json} onChange={(e) => setJson(e.target.value)} />
          </label>
          <Action type="submit" busy={put.isPending} busyLabel="Saving…" disabled={!id}>
            Put record
          </Action>
          <ErrorBox error={put.error} />
        </form>
      )}
    </div>
  );
}

export function TablesPage({ orgId }: { orgId: string }) {
  useTitle("Tables");
  const can = useCan(orgId);
  const { query } = useLocation();
  const open = query.get("collection") ?? "";
  const list = useQuery({
    queryKey: ["artifacts", orgId, "collections/"],
    queryFn: () => warren.artifacts(orgId).list("collections/"),
  });
  const names = [...new Set((list.data?.items ?? []).map((i) => i.path.split("/")[1] ?? ""))].sort();
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> / <OrgCrumb orgId={orgId} /> /
      </p>
      <h1>Tables</h1>
      <p className="sub">
        The organisation&apos;s collections: records that agents read and write under access lists.{" "}
        <Link href={`/orgs/${orgId}/notes`}>Notes</Link>
      </p>
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading rows={3} />
      ) : names.length === 0 ? (
        <Empty>No collection has records yet.</Empty>
      ) : (
        <ul className="tabs" aria-label="collections">
          {names.map((n) => (
            <li key={n}>
              <button
                type="button"
                className="link"
                aria-current={n === open ? "true" : undefined}
                onClick={() => navigate(`/orgs/${orgId}/tables?collection=${encodeURIComponent(n)}`)}
              >
                {n}
              </button>
            </li>
          ))}
        </ul>
      )}
      {open && <Collection key={open} orgId={orgId} name={open} canWrite={can.write} />}
    </section>
  );
}
