import { z } from "zod";
import { idOf, items, MAX_MIB, mibField, name } from "./common.js";

export const MachineState = z.enum(["stopped", "starting", "running"]).meta({ id: "MachineState" });
export const MachineTrust = z.enum(["isolated", "shared"]).meta({ id: "MachineTrust" });

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

export const MachineCreateRequest = z
  .object({
    org_id: idOf("org"),
    name,
    max_workspace_mib: mibField(MAX_MIB).optional(),
    memory_mib: memory.optional(),
    cpus: cpus.optional(),
    trust: MachineTrust.optional(),
  })
  .strict()
  .meta({ id: "MachineCreateRequest" });

export const MachineUpdateRequest = z
  .object({
    name: name.optional(),
    max_workspace_mib: mibField(MAX_MIB).optional(),
    memory_mib: memory.optional(),
    cpus: cpus.optional(),
  })
  .strict()
  .meta({ id: "MachineUpdateRequest" });
