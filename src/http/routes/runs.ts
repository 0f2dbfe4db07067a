import { idParams } from "../../contract/common.js";
import {
  Run,
  RunCreateRequest,
  RunEventList,
  RunEventsQuery,
  RunList,
  RunListQuery,
} from "../../contract/runs.js";
import type { Runs } from "../../runs/service.js";
import { route, type AnyRoute } from "../route.js";

export function runRoutes(runs: Runs): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/runs",
      id: "runs.create",
      tag: "runs",
      summary:
        "Start a command run (a generation), or queue it behind a busy agent or its organisation's cap",
      params: idParams("agt"),
      body: RunCreateRequest,
      status: 202,
      response: Run,
      errors: [
        "generation.busy",
        "run.org_limit",
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
      id: "runs.list",
      tag: "runs",
      summary: "The agent's runs, newest first",
      params: idParams("agt"),
      query: RunListQuery,
      response: RunList,
      handler: async ({ who, params, query }) => ({ items: await runs.list(who, params.id, query) }),
    }),
    route({
      method: "GET",
      url: "/api/runs/:id",
      id: "runs.get",
      tag: "runs",
      summary: "One run's record: status, exit, output, times, receipt",
      params: idParams("run"),
      response: Run,
      handler: ({ who, params }) => runs.get(who, params.id),
    }),
    route({
      method: "GET",
      url: "/api/runs/:id/events",
      id: "runs.events",
      tag: "runs",
      summary: "The run's trace: started, output, exit, measurement",
      params: idParams("run"),
      query: RunEventsQuery,
      response: RunEventList,
      handler: async ({ who, params, query }) => ({ items: await runs.events(who, params.id, query.after) }),
    }),
    route({
      method: "POST",
      url: "/api/runs/:id/cancel",
      id: "runs.cancel",
      tag: "runs",
      summary: "Cancel a queued or running run",
      params: idParams("run"),
      response: Run,
      errors: ["run.not_cancellable", "access.denied"],
      handler: ({ who, params }) => runs.cancel(who, params.id),
    }),
  ];
}
