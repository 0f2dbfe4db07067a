import { idParams } from "../../contract/common.js";
import {
  Run,
  RunCreateRequest,
  RunEvent,
  RunEventList,
  RunEventsQuery,
  RunList,
  RunListQuery,
} from "../../contract/runs.js";
import { TERMINAL_RUN_STATUSES } from "../../contract/lists.js";
import type { Runs } from "../../runs/service.js";
import { route, type AnyRoute } from "../route.js";
import { resumeAfter, serveEvents, wantsEventStream, type EventStreams } from "../sse.js";

export function runRoutes(
  runs: Runs,
  live: { streams: EventStreams; watch: (runId: string, fn: () => void) => () => void },
): AnyRoute[] {
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
        "run.queue_full",
        "run.input_too_large",
        "workspace.full",
        "workspace.measure",
        "access.denied",
        "version.gate",
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
      summary:
        "The run's trace: started, output, exit, measurement; with Accept: text/event-stream, as server-sent events (Last-Event-ID resumes)",
      params: idParams("run"),
      query: RunEventsQuery,
      response: RunEventList,
      stream: { type: "text/event-stream", schema: RunEvent },
      handler: async ({ who, params, query, req, reply }) => {
        if (!wantsEventStream(req)) return { items: await runs.events(who, params.id, query.after) };
        await runs.events(who, params.id, Number.MAX_SAFE_INTEGER);
        const terminal: readonly string[] = TERMINAL_RUN_STATUSES;
        return serveEvents(
          live.streams,
          req,
          reply,
          {
            read: async (after, limit) => (await runs.events(who, params.id, after)).slice(0, limit),
            watch: (fn) => live.watch(params.id, fn),
            done: async () => terminal.includes((await runs.get(who, params.id)).status),
          },
          resumeAfter(req, query.after),
          (e) => ({ type: e.type, body: e }),
        );
      },
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
