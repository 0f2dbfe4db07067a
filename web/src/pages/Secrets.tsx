// `/secrets?org=`: an organisation's secrets: names, descriptions and grants. A value is typed
// once, sent at creation, and never shown again (the API never returns one).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { SecretGrant, SecretUse } from "warren/sdk";
import { keys, useCan, useOrgs, warren } from "../api";
import { GrantList, grantName, grantTargets, OrgSelect, useGrantees } from "../grants";
import { Link, useLocation, useTitle } from "../router";
import { Action, Empty, ErrorBox, Loading, when } from "../ui";

export function SecretsPage() {
  useTitle("Secrets");
  const { query } = useLocation();
  const orgs = useOrgs();
  const orgId = query.get("org") ?? orgs.data?.[0]?.id ?? "";
  const can = useCan(orgId);
  const secrets = useQuery({
    queryKey: keys.secrets(orgId),
    enabled: orgId !== "",
    queryFn: () => warren.secrets.list({ org_id: orgId }).then((l) => l.items),
  });
  const { agents, guilds } = useGrantees(orgId);
  const qc = useQueryClient();
  const remove = useMutation({
    mutationFn: (id: string) => warren.secrets.delete(id),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.secrets(orgId) }),
  });
  const grant = useMutation({
    mutationFn: (v: { id: string; grant: SecretGrant }) => warren.secrets.grant(v.id, v.grant),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.secrets(orgId) }),
  });
  const revoke = useMutation({
    mutationFn: (v: { id: string; grant: SecretGrant }) => warren.secrets.revoke(v.id, v.grant),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.secrets(orgId) }),
  });
  const targets = grantTargets(orgId, agents.data ?? [], guilds.data ?? []);
  const nameOf = (g: SecretGrant) => grantName(g, agents.data ?? [], guilds.data ?? []);

  return (
    <section>
      <h1>Secrets</h1>
      <ErrorBox error={orgs.error} />
      {orgs.data?.length === 0 ? (
        <Empty>
          Secrets belong to an organisation: <Link href="/">create one</Link> first.
        </Empty>
      ) : (
        <>
          <OrgSelect orgs={orgs.data} value={orgId} path="/secrets" />
          <ErrorBox error={secrets.error} />
          {secrets.isPending && orgId ? (
            <Loading />
          ) : secrets.data?.length === 0 ? (
            <Empty>
              No secrets yet.{" "}
              {can.write
                ? "Create one below; it reaches the commands of the agents it is granted to as an environment variable."
                : ""}
            </Empty>
          ) : (
            <table data-testid="secrets">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Description</th>
                  <th>Granted to</th>
                  <th>Updated</th>
                  {can.write && (
                    <th>
                      <span className="visually-hidden">Actions</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {secrets.data?.map((s) => (
                  <tr key={s.id}>
                    <td>
                      <code>{s.name}</code>
                      {s.alias_of && <small> (alias)</small>}
                      {s.use === "model" && <small> (model key)</small>}
                    </td>
                    <td>{s.description}</td>
                    <td>
                      <GrantList
                        name={s.name}
                        grants={s.grants}
                        targets={targets}
                        nameOf={nameOf}
                        undo="revoke"
                        write={can.write}
                        onGrant={(g) => grant.mutate({ id: s.id, grant: g })}
                        onUndo={(g) => revoke.mutate({ id: s.id, grant: g })}
                      />
                    </td>
                    <td>{when(s.updated_at)}</td>
                    {can.write && (
                      <td>
                        <Action
                          type="button"
                          className="secondary"
                          onClick={() => remove.mutate(s.id)}
                          busy={remove.isPending && remove.variables === s.id}
                        >
                          Delete
                        </Action>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <ErrorBox error={remove.error ?? grant.error ?? revoke.error} />
          {can.write && orgId && (
            <NewSecret orgId={orgId} agents={agents.data ?? []} guilds={guilds.data ?? []} />
          )}
        </>
      )}
    </section>
  );
}

function NewSecret({
  orgId,
  agents,
  guilds,
}: {
  orgId: string;
  agents: { id: string; name: string }[];
  guilds: { id: string; name: string }[];
}) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [value, setValue] = useState("");
  const [target, setTarget] = useState(`org:${orgId}`);
  const [use, setUse] = useState<SecretUse>("env");
  const create = useMutation({
    mutationFn: () => {
      const [scope, id] = target.split(":") as [SecretGrant["scope"], string];
      return warren.secrets.create({ org_id: orgId, name, description, value, use, grants: [{ scope, id }] });
    },
    onSuccess: async () => {
      setName("");
      setDescription("");
      await qc.invalidateQueries({ queryKey: keys.secrets(orgId) });
    },
    // the value leaves the page once sent, whatever the answer
    onSettled: () => setValue(""),
  });
  return (
    <form
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <h2>New secret</h2>
      <div className="cols">
        <label>
          Name (the variable it becomes)
          <input
            name="secret_name"
            value={name}
            onChange={(e) => setName(e.target.value.toUpperCase())}
            pattern="[A-Z_][A-Z0-9_]*"
            required
          />
        </label>
        <label>
          Description
          <input
            name="secret_description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        </label>
        <label>
          Value (typed once, never shown again)
          <input
            name="secret_value"
            type="password"
            autoComplete="off"
            value={value}
            onChange={(e) => setValue(e.target.value)}
            minLength={8}
            required
          />
        </label>
        <label>
          Use
          <select name="secret_use" value={use} onChange={(e) => setUse(e.target.value as SecretUse)}>
            <option value="env">a variable of every command</option>
            <option value="model">a model key (only the model gateway reads it)</option>
          </select>
        </label>
        <label>
          Granted to
          <select name="secret_grant" value={target} onChange={(e) => setTarget(e.target.value)}>
            <option value={`org:${orgId}`}>the whole organisation</option>
            {agents.map((a) => (
              <option key={a.id} value={`agent:${a.id}`}>
                agent {a.name}
              </option>
            ))}
            {guilds.map((g) => (
              <option key={g.id} value={`guild:${g.id}`}>
                guild {g.name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Action type="submit" busy={create.isPending} busyLabel="Creating…">
        Create secret
      </Action>
      <ErrorBox error={create.error} />
      {create.isSuccess && (
        <p role="status">
          Created {create.data.name}. Its value is stored encrypted and will not be shown again.
        </p>
      )}
    </form>
  );
}
