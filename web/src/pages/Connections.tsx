// `/connections?org=`: an organisation's OAuth 2.0 providers (owners and admins register them),
// the accounts members connect through the provider's login, their status and their grants. A
// token never reaches the page; a client secret is typed once and never shown again.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Connection, SecretGrant } from "warren/sdk";
import { useCan, useOrgs, warren } from "../api";
import { GrantList, grantName, grantTargets, type Named, OrgSelect, useGrantees } from "../grants";
import { Link, useLocation, useTitle } from "../router";
import { Action, Empty, ErrorBox, Loading, StatusBadge, when } from "../ui";

const providersKey = (org: string) => ["connection-providers", org] as const;
const connectionsKey = (org: string) => ["connections", org] as const;

export function ConnectionsPage() {
  useTitle("Connections");
  const { query } = useLocation();
  const orgs = useOrgs();
  const orgId = query.get("org") ?? orgs.data?.[0]?.id ?? "";
  const connected = query.get("connected");
  const can = useCan(orgId);
  const providers = useQuery({
    queryKey: providersKey(orgId),
    enabled: orgId !== "",
    queryFn: () => warren.connections.providers({ org_id: orgId }).then((l) => l.items),
  });
  const connections = useQuery({
    queryKey: connectionsKey(orgId),
    enabled: orgId !== "",
    queryFn: () => warren.connections.list({ org_id: orgId }).then((l) => l.items),
  });
  const { agents, guilds } = useGrantees(orgId);
  const justConnected = connections.data?.find((c) => c.id === connected);

  return (
    <section>
      <h1>Connections</h1>
      <p className="empty">
        Accounts connected once through the provider&apos;s login. Agents&apos; http and MCP tools name a
        connection; the server sends its token, which never enters a box, a record or a model&apos;s context.
      </p>
      <ErrorBox error={orgs.error} />
      {orgs.data?.length === 0 ? (
        <Empty>
          Connections belong to an organisation: <Link href="/">create one</Link> first.
        </Empty>
      ) : (
        <>
          <OrgSelect orgs={orgs.data} value={orgId} path="/connections" />
          {justConnected && (
            <p role="status" data-testid="connection-connected">
              {justConnected.status === "active"
                ? `Connected ${justConnected.name}.`
                : `${justConnected.name} is ${justConnected.status}${justConnected.status_reason ? `: ${justConnected.status_reason}` : ""}.`}
            </p>
          )}
          <h2>Accounts</h2>
          <ErrorBox error={connections.error} />
          {connections.isPending && orgId ? (
            <Loading />
          ) : connections.data?.length === 0 ? (
            <Empty>No account connected yet.</Empty>
          ) : (
            <Accounts
              orgId={orgId}
              items={connections.data ?? []}
              write={can.write}
              agents={agents.data ?? []}
              guilds={guilds.data ?? []}
            />
          )}
          {can.write && orgId && (providers.data?.length ?? 0) > 0 && (
            <Connect providers={providers.data ?? []} />
          )}
          <h2>Providers</h2>
          <ErrorBox error={providers.error} />
          {providers.isPending && orgId ? (
            <Loading />
          ) : providers.data?.length === 0 ? (
            <Empty>
              No provider yet.{" "}
              {can.manage ? "Register one below." : "An owner or admin registers the providers."}
            </Empty>
          ) : (
            <Providers orgId={orgId} items={providers.data ?? []} manage={can.manage} />
          )}
          {can.manage && orgId && <NewProvider orgId={orgId} />}
        </>
      )}
    </section>
  );
}

function Providers({
  orgId,
  items,
  manage,
}: {
  orgId: string;
  items: {
    id: string;
    name: string;
    authorization_url: string;
    token_url: string;
    client_id: string;
    scopes: string[];
    has_client_secret: boolean;
  }[];
  manage: boolean;
}) {
  const qc = useQueryClient();
  const remove = useMutation({
    mutationFn: (id: string) => warren.connections.deleteProvider(id),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: providersKey(orgId) });
      await qc.invalidateQueries({ queryKey: connectionsKey(orgId) });
    },
  });
  return (
    <>
      <table data-testid="connection-providers">
        <thead>
          <tr>
            <th>Name</th>
            <th>Endpoints</th>
            <th>Client</th>
            <th>Scopes</th>
            {manage && (
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {items.map((p) => (
            <tr key={p.id} data-testid={`provider-${p.name}`}>
              <td>{p.name}</td>
              <td>
                <small>
                  authorize <code>{p.authorization_url}</code>
                  <br />
                  token <code>{p.token_url}</code>
                </small>
              </td>
              <td>
                <code>{p.client_id}</code>
                {p.has_client_secret && <small> (with a client secret)</small>}
              </td>
              <td>{p.scopes.join(" ") || "—"}</td>
              {manage && (
                <td>
                  <Action
                    type="button"
                    className="secondary"
                    onClick={() => remove.mutate(p.id)}
                    busy={remove.isPending && remove.variables === p.id}
                  >
                    Remove
                  </Action>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      <ErrorBox error={remove.error} />
    </>
  );
}

function Accounts({
  orgId,
  items,
  write,
  agents,
  guilds,
}: {
  orgId: string;
  items: Connection[];
  write: boolean;
  agents: Named[];
  guilds: Named[];
}) {
  const qc = useQueryClient();
  const done = () => qc.invalidateQueries({ queryKey: connectionsKey(orgId) });
  const grants = useMutation({
    mutationFn: (v: { id: string; grants: SecretGrant[] }) => warren.connections.setGrants(v.id, v.grants),
    onSuccess: done,
  });
  const revoke = useMutation({ mutationFn: (id: string) => warren.connections.revoke(id), onSuccess: done });
  const targets = grantTargets(orgId, agents, guilds);
  const nameOf = (g: SecretGrant) => grantName(g, agents, guilds);
  const same = (a: SecretGrant, b: SecretGrant) => a.scope === b.scope && a.id === b.id;
  return (
    <>
      <table data-testid="connections">
        <thead>
          <tr>
            <th>Name</th>
            <th>Status</th>
            <th>Granted to</th>
            <th>Token expires</th>
            {write && (
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {items.map((c) => {
            const account = `${c.connected_by ? `${c.connected_by}'s` : "this"} ${c.provider} account`;
            return (
              <tr key={c.id} data-testid={`connection-${c.name}`}>
                <td>
                  <code>{c.name}</code>
                  <br />
                  <small>
                    {c.provider}
                    {c.connected_by && `, connected by ${c.connected_by}`}
                  </small>
                </td>
                <td data-testid="connection-status">
                  <StatusBadge status={c.status === "active" ? "connected" : c.status} />
                  {c.status_reason && (
                    <small data-testid="connection-reason">
                      <br />
                      {c.status_reason}
                    </small>
                  )}
                </td>
                <td data-testid="connection-grants">
                  <GrantList
                    name={c.name}
                    grants={c.grants}
                    targets={targets}
                    nameOf={nameOf}
                    undo="ungrant"
                    write={write}
                    canGrant={write && c.status !== "revoked"}
                    onGrant={(g) => grants.mutate({ id: c.id, grants: [...c.grants, g] })}
                    onUndo={(g) => grants.mutate({ id: c.id, grants: c.grants.filter((x) => !same(x, g)) })}
                  />
                  {c.grants
                    .filter((g) => g.scope === "guild")
                    .map((g) => (
                      <p key={g.id} data-testid="connection-shared">
                        <small>
                          Every agent of {nameOf(g)} uses it as {account}.
                        </small>
                      </p>
                    ))}
                  {c.grants.some((g) => g.scope === "org") && (
                    <p data-testid="connection-shared">
                      <small>Every agent of the organisation uses it as {account}.</small>
                    </p>
                  )}
                </td>
                <td>{when(c.expires_at)}</td>
                {write && (
                  <td>
                    {c.status !== "revoked" && (
                      <Action
                        type="button"
                        className="secondary"
                        onClick={() => revoke.mutate(c.id)}
                        busy={revoke.isPending && revoke.variables === c.id}
                        busyLabel="Revoking…"
                        data-testid="connection-revoke"
                      >
                        Revoke
                      </Action>
                    )}
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      <ErrorBox error={grants.error ?? revoke.error} />
    </>
  );
}

function Connect({ providers }: { providers: Named[] }) {
  const [provider, setProvider] = useState(providers[0]?.id ?? "");
  const [name, setName] = useState("");
  const start = useMutation({
    mutationFn: () => warren.connections.start({ provider_id: provider || (providers[0]?.id ?? ""), name }),
    // the browser signs in at the provider, which sends it back to the server's callback
    onSuccess: (s) => window.location.assign(s.authorize_url),
  });
  return (
    <form
      className="stack"
      data-testid="connection-connect"
      onSubmit={(e) => {
        e.preventDefault();
        start.mutate();
      }}
    >
      <h3>Connect an account</h3>
      <div className="cols">
        <label>
          Provider
          <select name="connection_provider" value={provider} onChange={(e) => setProvider(e.target.value)}>
            {providers.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Name (what tools name)
          <input
            name="connection_name"
            value={name}
            onChange={(e) => setName(e.target.value.toLowerCase())}
            pattern="[a-z][a-z0-9_\-]{0,63}"
            required
          />
        </label>
      </div>
      <Action type="submit" busy={start.isPending || start.isSuccess} busyLabel="Going to the provider…">
        Connect
      </Action>
      <ErrorBox error={start.error} />
      <small>Your browser goes to the provider to sign in, then comes back here.</small>
    </form>
  );
}

function NewProvider({ orgId }: { orgId: string }) {
  const qc = useQueryClient();
  const [f, setF] = useState({
    name: "",
    authorization_url: "",
    token_url: "",
    revocation_url: "",
    client_id: "",
    client_secret: "",
    scopes: "",
  });
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) =>
    setF({ ...f, [k]: e.target.value });
  const create = useMutation({
    mutationFn: () =>
      warren.connections.createProvider({
        org_id: orgId,
        name: f.name,
        authorization_url: f.authorization_url,
        token_url: f.token_url,
        ...(f.revocation_url ? { revocation_url: f.revocation_url } : {}),
        client_id: f.client_id,
        ...(f.client_secret ? { client_secret: f.client_secret } : {}),
        scopes: f.scopes.split(/[\s,]+/).filter(Boolean),
      }),
    onSuccess: async () => {
      setF({
        name: "",
        authorization_url: "",
        token_url: "",
        revocation_url: "",
        client_id: "",
        client_secret: "",
        scopes: "",
      });
      await qc.invalidateQueries({ queryKey: providersKey(orgId) });
    },
    // the client secret leaves the page once sent, whatever the answer
    onSettled: () => setF((x) => ({ ...x, client_secret: "" })),
  });
  return (
    <form
      className="stack"
      data-testid="provider-new"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <h3>Register a provider</h3>
      <div className="cols">
        <label>
          Name
          <input name="provider_name" value={f.name} onChange={set("name")} required />
        </label>
        <label>
          Authorization endpoint
          <input
            name="provider_authorization_url"
            type="url"
            value={f.authorization_url}
            onChange={set("authorization_url")}
            required
          />
        </label>
        <label>
          Token endpoint
          <input
            name="provider_token_url"
            type="url"
            value={f.token_url}
            onChange={set("token_url")}
            required
          />
        </label>
        <label>
          Revocation endpoint (optional)
          <input
            name="provider_revocation_url"
            type="url"
            value={f.revocation_url}
            onChange={set("revocation_url")}
          />
        </label>
        <label>
          Client id
          <input name="provider_client_id" value={f.client_id} onChange={set("client_id")} required />
        </label>
        <label>
          Client secret (sealed, never shown again)
          <input
            name="provider_client_secret"
            type="password"
            autoComplete="off"
            value={f.client_secret}
            onChange={set("client_secret")}
          />
        </label>
        <label>
          Scopes (space separated)
          <input name="provider_scopes" value={f.scopes} onChange={set("scopes")} />
        </label>
      </div>
      <Action type="submit" busy={create.isPending} busyLabel="Registering…">
        Register provider
      </Action>
      <ErrorBox error={create.error} />
    </form>
  );
}
