import { idParams } from "../../contract/common.js";
import {
  Schedule,
  ScheduleCreateRequest,
  ScheduleList,
  ScheduleTriggered,
  ScheduleUpdateRequest,
} from "../../contract/schedules.js";
import type { Schedules } from "../../schedules/index.js";
import { route, type AnyRoute } from "../route.js";

export function scheduleRoutes(schedules: Schedules): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/schedules",
      id: "schedules.create",
      tag: "schedules",
      summary: "A standing order to run the agent: by cron in a time zone, or every N seconds",
      params: idParams("agt"),
      body: ScheduleCreateRequest,
      status: 201,
      response: Schedule,
      errors: ["run.input_too_large", "access.denied"],
      handler: ({ who, params, body }) => schedules.create(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/schedules",
      id: "schedules.list",
      tag: "schedules",
      summary: "The agent's schedules, newest first",
      params: idParams("agt"),
      response: ScheduleList,
      handler: async ({ who, params }) => ({ items: await schedules.list(who, params.id) }),
    }),
    route({
      method: "GET",
      url: "/api/schedules/:id",
      id: "schedules.get",
      tag: "schedules",
      summary: "One schedule, with its next slot and its failures in a row",
      params: idParams("sch"),
      response: Schedule,
      handler: ({ who, params }) => schedules.get(who, params.id),
    }),
    route({
      method: "PATCH",
      url: "/api/schedules/:id",
      id: "schedules.update",
      tag: "schedules",
      summary: "Change any field; unpausing clears its failures (what it missed meanwhile is not caught up)",
      params: idParams("sch"),
      body: ScheduleUpdateRequest,
      response: Schedule,
      errors: ["run.input_too_large", "access.denied"],
      handler: ({ who, params, body }) => schedules.update(who, params.id, body),
    }),
    route({
      method: "DELETE",
      url: "/api/schedules/:id",
      id: "schedules.delete",
      tag: "schedules",
      summary: "Delete the schedule (its runs stay, with their schedule_id)",
      params: idParams("sch"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => schedules.remove(who, params.id),
    }),
    route({
      method: "POST",
      url: "/api/schedules/:id/trigger",
      id: "schedules.trigger",
      tag: "schedules",
      summary: "Start a run of the schedule now, as the caller, whatever its overlap policy",
      params: idParams("sch"),
      status: 202,
      response: ScheduleTriggered,
      errors: [
        "run.input_too_large",
        "run.org_limit",
        "workspace.full",
        "workspace.measure",
        "access.denied",
      ],
      handler: ({ who, params }) => schedules.trigger(who, params.id),
    }),
  ];
}
