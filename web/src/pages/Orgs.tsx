// `/`: the caller's organisations, and a new one.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { keys, useOrgs, warren } from "../api";
import { Link, navigate, useTitle } from "../router";
import { Action, Empty, ErrorBox, Loading } from "../ui";

export function OrgsPage() {
  useTitle("Organisations");
  const orgs = useOrgs();
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: (n: string) => warren.orgs.create({ name: n }),
    onSuccess: async (org) => {
      await qc.invalidateQueries({ queryKey: keys.orgs });
      navigate(`/orgs/${org.id}`);
    },
  });
  return (
    <section>
      <h1>Organisations</h1>
      <ErrorBox error={orgs.error} />
      {orgs.isPending ? (
        <Loading />
      ) : orgs.data && orgs.data.length === 0 ? (
        <Empty>
          You are not a member of any organisation yet. Create one below to add machines and agents.
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Your role</th>
              <th>Id</th>
            </tr>
          </thead>
          <tbody>
            {orgs.data?.map((o) => (
              <tr key={o.id}>
                <td>
                  <Link href={`/orgs/${o.id}`}>{o.name}</Link>
                </td>
                <td>
                  <span className="role">{o.role}</span>
                </td>
                <td>
                  <code>{o.id}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        className="inline"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate(name);
        }}
      >
        <h2>New organisation</h2>
        <label>
          Name
          <input name="org_name" value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <Action type="submit" busy={create.isPending} busyLabel="Creating…">
          Create organisation
        </Action>
        <ErrorBox error={create.error} />
      </form>
    </section>
  );
}
