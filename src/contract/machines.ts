import { z } from "zod";
import { idOf, items, MAX_MIB, mibField, name } from "./common.js";
import { TRUSTS } from "./lists.js";

export const MachineState = z.enum(["stopped", "starting", "running", "paused"]).meta({ id: "MachineState" });
export const MachineTrust = z.enum(TRUSTS).meta({ id: "MachineTrust" });

export const BoxUsage = z
  .object({
    cpu_s: z.number().describe("CPU seconds used since the box started"),
    memory_bytes: z.number().describe("memory in use now (cgroup accounting: page cache and tmpfs count)"),
    memory_peak_bytes: z.number().describe("the highest memory use since the box started"),
    pids: z.number().describe("processes and threads now"),
  })
  .meta({ id: "BoxUsage" });

export const BoxEvent = z
  .object({
    at: z.string(),
    type: z.string().describe("`runaway`: a command tree stopped by the server"),
    detail: z.string().describe("what happened, for people"),
    data: z
      .record(z.string(), z.unknown())
      .describe(
        "for `runaway`: limit, reason (held, forks or oom), held_s, command, agent_id, run_id, argv, pids, memory_bytes, oom_kills, fork_failures, ended",
      ),
  })
  .meta({ id: "BoxEvent" });

export const MachineBox = z
  .object({
    state: MachineState,
    usage: BoxUsage.nullable().describe("null when the box is not running"),
    at_limit: z
      .object({ limit: z.enum(["pids", "memory"]), since: z.string() })
      .optional()
      .describe("present while the agents' commands hold the box at a limit"),
    events: z.array(BoxEvent).describe("the latest events of the box, oldest first"),
  })
  .meta({ id: "MachineBox" });

const runawayAfter = z
  .number()
  .int("must be a whole number of seconds")
  .min(1, "must be at least 1")
  .max(86400, "must be at most 86400");

export const Machine = z
  .object({
    id: z.string(),
    org_id: z.string(),
    name: z.string(),
    state: MachineState,
    state_reason: z.string(),
    state_changed_at: z.string(),
    max_workspace_mib: z.number(),
    workspace_mib: z.number().nullable().describe("null before the first measurement"),
    memory_mib: z.number(),
    cpus: z.number(),
    trust: MachineTrust,
    agents: z.number().describe("how many agents live on the machine"),
    reserved_mib: z
      .number()
      .describe("what the disk caps of the agents on the machine add up to (they reserve its disk cap)"),
    unreserved_mib: z
      .number()
      .describe(
        "the machine's disk cap less what its agents reserve, at least 0: the room a new agent may safely take",
      ),
    free_mib: z
      .number()
      .nullable()
      .describe("the machine's disk cap less its folder as last measured (after a generation); null before"),
    runaway_after_s: z
      .number()
      .describe("how long a command tree may hold the box at its pids or memory limit before it is stopped"),
    image: z
      .string()
      .nullable()
      .describe("the machine's own image on oci and kubernetes (null: the boxes' image)"),
    gpu: z.boolean().describe("the host's GPU devices are in the box"),
    nested_engine: z.boolean().describe("a container engine may run inside the box"),
    env_revision: z.number().describe("the environment's last good revision (0: the base alone)"),
    box_env_revision: z
      .number()
      .nullable()
      .describe("the environment revision the machine's box runs (null: no box started since)"),
    box: MachineBox.optional().describe("the box's usage and events (GET /api/machines/:id)"),
    created_at: z.string(),
  })
  .meta({ id: "Machine" });
export const MachineList = items(Machine, "MachineList");

const memory = z
  .number()
  .int("must be a whole number of MiB")
  .min(64, "must be at least 64")
  .max(262144, "must be at most 262144");
const cpus = z.number().min(0.1, "must be at least 0.1").max(64, "must be at most 64");
/** An image reference as engines spell it: name[:tag][@digest]. */
const image = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._/-]{0,199}(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$/,
    "must be an image reference: name[:tag][@sha256:digest]",
  );
/** What a machine may turn on where its provider and host can (400 machine.capability_unavailable). */
const capabilities = {
  image: image.nullable().optional(),
  gpu: z.boolean().optional(),
  nested_engine: z.boolean().optional(),
};

export const MachineCreateRequest = z
  .object({
    org_id: idOf("org"),
    name,
    max_workspace_mib: mibField(MAX_MIB).optional(),
    memory_mib: memory.optional(),
    cpus: cpus.optional(),
    trust: MachineTrust.optional(),
    runaway_after_s: runawayAfter.optional(),
    ...capabilities,
  })
  .strict()
  .meta({ id: "MachineCreateRequest" });

export const MachineUpdateRequest = z
  .object({
    name: name.optional(),
    max_workspace_mib: mibField(MAX_MIB).optional(),
    memory_mib: memory.optional(),
    cpus: cpus.optional(),
    runaway_after_s: runawayAfter.optional(),
    ...capabilities,
  })
  .strict()
  .meta({ id: "MachineUpdateRequest" });
