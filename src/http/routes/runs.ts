import { z } from "zod";
import type { Runs } from "../../runs/service.js";
import { route, type AnyRoute } from "../route.js";
import { idOf, idParams, items } from "../schemas.js";
import { execBody } from "./exec.js";

const run = z.object({
  id: z.string(),
  agent_id: z.string(),
  machine_id: z.string(),
  kind: z.string(),
  status: z.enum(["queued", "running", "succeeded", "failed", "timed_out", "cancelled", "lost"]),
  status_reason: z.string().nullable(),
  argv: z.array(z.string()),
  exit_code: z.number().nullable(),
  signal: z.string().nullable(),
  output: z.string(),
  output_truncated: z.boolean(),
  timeout_s: z.number(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  receipt: z.unknown(),
  output_withheld: z.boolean().optional(),
});

const event = z.object({ id: z.number(), type: z.string(), at: z.string(), data: z.unknown() });

// The input's own limit (256 KiB) is checked by the service to answer run.input_too_large;
// the schema only bounds what it will even read.
const runBody = z
  .object({
    kind: z.literal("command"),
    argv: execBody.shape.argv,
    command: execBody.shape.command,
    env: execBody.shape.env,
    input: z
      .string()
      .max(4 * 1024 * 1024)
      .optional(),
    timeout_s: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 3600)
      .optional(),
    limits: execBody.shape.limits,
  })
  .strict()
  .refine((b) => (b.argv === undefined) !== (b.command === undefined), {
    message: "give exactly one of argv or command",
    path: ["argv"],
  });

export function runRoutes(runs: Runs): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/runs",
      tag: "runs",
      summary: "Start a command run (a generation): input at /agent/input, output on stdout, a record",
      params: idParams("agt"),
      body: runBody,
      status: 202,
      response: run,
      errors: [
        "generation.busy",
        "run.input_too_large",
        "workspace.full",
        "workspace.measure",
        "access.denied",
      ],
      handler: ({ who, params, body }) => runs.start(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/runs",
      tag: "runs",
      summary: "The agent's runs, newest first",
      params: idParams("agt"),
      query: z
        .object({
          limit: z.coerce.number().int().min(1).max(500).default(50),
          before: idOf("run").optional(),
        })
        .strict(),
      response: items(run),
      handler: async ({ who, params, query }) => ({ items: await runs.list(who, params.id, query) }),
    }),
    route({
      method: "GET",
      url: "/api/runs/:id",
      tag: "runs",
      summary: "One run's record: status, exit, output, times, receipt",
      params: idParams("run"),
      response: run,
      handler: ({ who, params }) => runs.get(who, params.id),
    }),
    route({
      method: "GET",
      url: "/api/runs/:id/events",
      tag: "runs",
      summary: "The run's trace: started, output, exit, measurement",
      params: idParams("run"),
      query: z.object({ after: z.coerce.number().int().min(0).optional() }).strict(),
      response: items(event),
      handler: async ({ who, params, query }) => ({ items: await runs.events(who, params.id, query.after) }),
    }),
    route({
      method: "POST",
      url: "/api/runs/:id/cancel",
      tag: "runs",
      summary: "Cancel a queued or running run",
      params: idParams("run"),
      response: run,
      errors: ["run.not_cancellable", "access.denied"],
      handler: ({ who, params }) => runs.cancel(who, params.id),
    }),
  ];
}
