// `/orgs/:id`: an organisation's members (roles), machines and agents.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ROLES, type Machine, type Role } from "warren/sdk";
import { keys, useCan, useOrgs, warren } from "../api";
import { MaxDisk, startingMaxDisk, type DiskFigures } from "../disk";
import { AreasSection } from "./Areas";
import { OrgApprovals } from "./Approvals";
import { Link, navigate, useTitle } from "../router";
import { Action, Dialog, Empty, ErrorBox, Loading, mib, StatusBadge } from "../ui";
import { OrgDashboard } from "./Usage";

export function OrgPage({ id }: { id: string }) {
  const orgs = useOrgs();
  const org = orgs.data?.find((o) => o.id === id);
  useTitle(org?.name ?? "Organisation");
  const can = useCan(id);
  const members = useQuery({
    queryKey: keys.members(id),
    queryFn: () => warren.orgs.members(id).then((l) => l.items),
  });
  const machines = useQuery({
    queryKey: keys.machines(id),
    queryFn: () => warren.machines.list({ org_id: id }).then((l) => l.items),
    refetchInterval: 5000,
  });
  const agents = useQuery({
    queryKey: keys.agents(id),
    queryFn: () => warren.agents.list({ org_id: id }).then((l) => l.items),
  });
  const [creating, setCreating] = useState(false);
  const qc = useQueryClient();
  const setRole = useMutation({
    mutationFn: (v: { email: string; role: Role }) => warren.orgs.setMember(id, v),
    onSettled: () => qc.invalidateQueries({ queryKey: keys.members(id) }),
  });
  const removeMember = useMutation({
    mutationFn: (userId: string) => warren.orgs.removeMember(id, userId),
    onSettled: () => qc.invalidateQueries({ queryKey: keys.members(id) }),
  });

  if (orgs.isSuccess && !org)
    return (
      <section>
        <h1>Organisation</h1>
        <ErrorBox error={members.error} />
        <Empty>
          This organisation was not found, or you are not a member. Go back to your{" "}
          <Link href="/">organisations</Link>.
        </Empty>
      </section>
    );

  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> /
      </p>
      <h1>
        {org?.name ?? "…"} {org && <span className="role">you: {org.role}</span>}
      </h1>
      <p className="sub">
        <Link href={`/secrets?org=${id}`}>Secrets of this organisation</Link> ·{" "}
        <Link href={`/orgs/${id}/notes`}>Notes</Link> · <Link href={`/orgs/${id}/tables`}>Tables</Link> ·{" "}
        <Link href={`/orgs/${id}/flows`}>Flows</Link> · <Link href={`/orgs/${id}/usage`}>Usage</Link>
      </p>
      <OrgDashboard orgId={id} />
      <OrgApprovals orgId={id} can={can} />

      <h2>Machines</h2>
      <ErrorBox error={machines.error} />
      {machines.isPending ? (
        <Loading />
      ) : machines.data?.length === 0 ? (
        <Empty>
          No machines yet.{" "}
          {can.write ? "Create one below: agents live on machines." : "An editor or admin can create one."}
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>State</th>
              <th>Agents</th>
              <th>Disk reserved</th>
              <th>Limits</th>
            </tr>
          </thead>
          <tbody>
            {machines.data?.map((m) => (
              <tr key={m.id}>
                <td>
                  <Link href={`/machines/${m.id}`}>{m.name}</Link>
                </td>
                <td>
                  <StatusBadge status={m.state} />
                </td>
                <td>{m.agents}</td>
                <td>
                  {mib(m.reserved_mib)} of {mib(m.max_workspace_mib)}
                </td>
                <td>
                  {m.memory_mib} MiB, {m.cpus} CPU, {m.trust}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can.write && <NewMachine orgId={id} />}

      <h2>Agents</h2>
      <ErrorBox error={agents.error} />
      {agents.isPending ? (
        <Loading />
      ) : agents.data?.length === 0 ? (
        <Empty>
          No agents yet.{" "}
          {can.write
            ? machines.data?.length
              ? "Create one with New agent."
              : "Create a machine first, then an agent on it."
            : "An editor or admin can create one."}
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Machine</th>
              <th>Home</th>
              <th>Max disk</th>
            </tr>
          </thead>
          <tbody>
            {agents.data?.map((a) => (
              <tr key={a.id}>
                <td>
                  <Link href={`/agents/${a.id}`}>{a.name}</Link>
                </td>
                <td>
                  <Link href={`/machines/${a.machine_id}`}>
                    {machines.data?.find((m) => m.id === a.machine_id)?.name ?? a.machine_id}
                  </Link>
                </td>
                <td>
                  <code>{a.home}</code>
                </td>
                <td>{mib(a.max_workspace_mib)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can.write && (machines.data?.length ?? 0) > 0 && (
        <button type="button" onClick={() => setCreating(true)}>
          New agent
        </button>
      )}
      {creating && machines.data && (
        <NewAgentDialog orgId={id} machines={machines.data} onClose={() => setCreating(false)} />
      )}

      <h2>Members</h2>
      <ErrorBox error={members.error} />
      {members.isPending ? (
        <Loading rows={2} />
      ) : (
        <table>
          <thead>
            <tr>
              <th>Email</th>
              <th>Role</th>
              <th>Areas</th>
            </tr>
          </thead>
          <tbody>
            {members.data?.map((m) => (
              <tr key={m.user_id}>
                <td>{m.email}</td>
                <td>
                  {can.manage ? (
                    <select
                      aria-label={`role of ${m.email}`}
                      value={m.role}
                      onChange={(e) => setRole.mutate({ email: m.email, role: e.target.value as Role })}
                    >
                      {ROLES.map((r) => (
                        <option key={r}>{r}</option>
                      ))}
                    </select>
                  ) : (
                    <span className="role">{m.role}</span>
                  )}
                  {can.manage && (
                    <button
                      type="button"
                      className="link"
                      aria-label={`remove ${m.email}`}
                      onClick={() => removeMember.mutate(m.user_id)}
                    >
                      remove
                    </button>
                  )}
                </td>
                <td data-testid={`areas of ${m.email}`}>{m.areas.join(", ") || "whole home"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorBox error={setRole.error ?? removeMember.error} />
      {can.manage && <AddMember orgId={id} />}

      <AreasSection orgId={id} manage={can.manage} members={members.data ?? []} />
    </section>
  );
}

function NewMachine({ orgId }: { orgId: string }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [cap, setCap] = useState(51200);
  const create = useMutation({
    mutationFn: () => warren.machines.create({ org_id: orgId, name, max_workspace_mib: cap }),
    onSuccess: async () => {
      setName("");
      await qc.invalidateQueries({ queryKey: keys.machines(orgId) });
    },
  });
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <label>
        Machine name
        <input name="machine_name" value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <label>
        Disk cap (MiB)
        <input
          name="machine_disk"
          type="number"
          min={1}
          value={cap}
          onChange={(e) => setCap(Number(e.target.value))}
          required
        />
      </label>
      <Action type="submit" busy={create.isPending} busyLabel="Creating…">
        Create machine
      </Action>
      <ErrorBox error={create.error} />
    </form>
  );
}

export function figuresOf(m: Machine): DiskFigures {
  return {
    machineMib: m.max_workspace_mib,
    othersMib: m.reserved_mib,
    freeMib: m.free_mib,
    machineName: m.name,
  };
}

function NewAgentDialog({
  orgId,
  machines,
  onClose,
}: {
  orgId: string;
  machines: Machine[];
  onClose: () => void;
}) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [machineId, setMachineId] = useState(machines[0]?.id ?? "");
  const machine = machines.find((m) => m.id === machineId) ?? machines[0];
  const figures = machine ? figuresOf(machine) : null;
  // Max disk follows the chosen machine until the operator types a value.
  const [typed, setTyped] = useState<number | null>(null);
  const value = typed ?? (figures ? startingMaxDisk(figures) : 10240);
  const [warnings, setWarnings] = useState<string[] | null>(null);
  const create = useMutation({
    mutationFn: () =>
      warren.agents.create({ org_id: orgId, machine_id: machineId, name, max_workspace_mib: value }),
    onSuccess: async (agent) => {
      await qc.invalidateQueries({ queryKey: keys.agents(orgId) });
      await qc.invalidateQueries({ queryKey: keys.machines(orgId) });
      if (agent.warnings?.length) setWarnings(agent.warnings);
      else {
        onClose();
        navigate(`/agents/${agent.id}`);
      }
      qc.setQueryData(keys.agent(agent.id), agent);
      setCreated(agent.id);
    },
  });
  const [created, setCreated] = useState<string | null>(null);
  return (
    <Dialog title="New agent" onClose={onClose}>
      {warnings && created ? (
        <div>
          <p>The agent was created, with a warning from the server:</p>
          {warnings.map((w) => (
            <p key={w} className="warn" role="status">
              {w}
            </p>
          ))}
          <div className="buttons">
            <button type="button" onClick={() => (onClose(), navigate(`/agents/${created}`))} autoFocus>
              Open the agent
            </button>
          </div>
        </div>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate();
          }}
        >
          <label>
            Name
            <input
              name="agent_name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              required
              autoFocus
            />
          </label>
          <label>
            Machine
            <select name="machine" value={machineId} onChange={(e) => setMachineId(e.target.value)}>
              {machines.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name} ({mib(m.unreserved_mib)} unreserved)
                </option>
              ))}
            </select>
          </label>
          {figures && <MaxDisk figures={figures} value={value} onChange={setTyped} />}
          <ErrorBox error={create.error} />
          <div className="buttons">
            <button type="button" className="secondary" onClick={onClose}>
              Cancel
            </button>
            <Action
              type="submit"
              busy={create.isPending}
              busyLabel="Creating…"
              disabled={!Number.isFinite(value)}
            >
              Create agent
            </Action>
          </div>
        </form>
      )}
    </Dialog>
  );
}

function AddMember({ orgId }: { orgId: string }) {
  const qc = useQueryClient();
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [areas, setAreas] = useState("");
  const add = useMutation({
    mutationFn: () =>
      warren.orgs.setMember(orgId, {
        email,
        role,
        areas: areas
          .split(",")
          .map((a) => a.trim())
          .filter((a) => a !== ""),
      }),
    onSuccess: async () => {
      setEmail("");
      setAreas("");
      await qc.invalidateQueries({ queryKey: keys.members(orgId) });
    },
  });
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        add.mutate();
      }}
    >
      <label>
        Email
        <input
          name="member_email"
          type="email"
          value={email}
          onChange={(e) => setEmail(e.target.value)}
          required
        />
      </label>
      <label>
        Role
        <select name="member_role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
      </label>
      <label>
        Areas (comma-separated; none: the whole home)
        <input name="member_areas" value={areas} onChange={(e) => setAreas(e.target.value)} />
      </label>
      <Action type="submit" busy={add.isPending} busyLabel="Saving…">
        Add or change member
      </Action>
      <ErrorBox error={add.error} />
    </form>
  );
}
