// A machine's definition: what rebuilds the machine and its agents elsewhere (another
// organisation, another provider), as text. Ids and times are not part of it: agents, areas,
// secrets and flows are named; secrets carry their names and grants, never their values.
import { z } from "zod";
import { idOf } from "./common.js";
import { Machine } from "./machines.js";

const pkg = z.object({ name: z.string().min(1).max(200), version: z.string().min(1).max(200) }).strict();

export const DefinitionSecret = z
  .object({
    name: z.string().min(1).max(100),
    use: z.enum(["env", "model", "tool", "egress"]),
    description: z.string().max(4096),
    hosts: z.array(z.string().max(300)).max(64),
    /** org: every agent of the organisation; agent: one agent of the definition, by name. */
    grants: z.array(
      z.union([z.object({ org: z.literal(true) }).strict(), z.object({ agent: z.string() }).strict()]),
    ),
  })
  .strict();

export const DefinitionSchedule = z
  .object({
    name: z.string().max(100),
    cron: z.string().nullable(),
    every_s: z.number().int().nullable(),
    timezone: z.string(),
    kind: z.enum(["agent", "command"]),
    command: z.string().nullable(),
    argv: z.array(z.string()).nullable(),
    input: z.string(),
    timeout_s: z.number().int().nullable(),
    overlap: z.enum(["skip", "queue_one", "allow"]),
    catch_up: z.enum(["one", "none"]),
    paused: z.boolean(),
    start_at: z.string().nullable(),
    end_at: z.string().nullable(),
  })
  .strict();

export const DefinitionAgent = z
  .object({
    name: z.string().min(1).max(100),
    max_workspace_mib: z.number().int().positive(),
    spec: z
      .record(z.string(), z.unknown())
      .describe("the agent's current spec: kind, model, instructions, tools, policies, limits"),
    personas: z.array(
      z
        .object({
          name: z.string(),
          instructions: z.string(),
          area: z.string().nullable(),
          tools: z.array(z.string()).nullable(),
          secrets: z.array(z.string()).nullable(),
        })
        .strict(),
    ),
    schedules: z.array(DefinitionSchedule),
  })
  .strict();

export const MachineDefinition = z
  .object({
    definition: z.literal("warren.machine/1"),
    machine: z
      .object({
        name: z.string().min(1).max(100),
        trust: z.enum(["isolated", "shared"]),
        limits: z
          .object({
            max_workspace_mib: z.number().int().positive(),
            memory_mib: z.number().int().positive(),
            cpus: z.number().positive(),
            runaway_after_s: z.number().int().positive(),
          })
          .strict(),
        environment: z
          .object({
            image: z.string().nullable(),
            gpu: z.boolean(),
            nested_engine: z.boolean(),
            packages: z.array(pkg),
            npm: z.array(pkg),
          })
          .strict(),
      })
      .strict(),
    areas: z.array(z.object({ name: z.string(), folders: z.array(z.string()) }).strict()),
    secrets: z.array(DefinitionSecret),
    agents: z.array(DefinitionAgent),
    flows: z.array(z.object({ name: z.string(), agents: z.array(z.string()).min(1) }).strict()),
  })
  .strict()
  .meta({ id: "MachineDefinition" });

export const MachineDefinitionText = z
  .object({
    text: z.string().describe("the definition as YAML (what `warren machines export` prints)"),
    definition: MachineDefinition,
  })
  .meta({ id: "MachineDefinitionText" });

export const MachineImportRequest = z
  .object({
    text: z
      .string()
      .min(1)
      .max(4 * 1024 * 1024)
      .describe("a definition as YAML (or JSON)"),
    name: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("the new machine's name (default: the definition's)"),
  })
  .strict()
  .meta({ id: "MachineImportRequest" });

export const MachineImported = z
  .object({
    machine: Machine,
    agents: z.array(z.object({ id: idOf("agt"), name: z.string() })),
    missing_secrets: z
      .array(z.string())
      .describe(
        "secrets the definition names that the organisation lacks: set their values, then grant them",
      ),
    environment_pending: z
      .array(z.string())
      .describe("packages of the definition's environment whose build on the new machine has started"),
    environment_revision: z
      .number()
      .int()
      .nullable()
      .describe(
        "the revision building them (its status and log under the machine's environment); null: none",
      ),
  })
  .meta({ id: "MachineImported" });

export const AgentMoveRequest = z
  .object({ machine_id: idOf("mch").describe("another machine of the agent's organisation") })
  .strict()
  .meta({ id: "AgentMoveRequest" });
