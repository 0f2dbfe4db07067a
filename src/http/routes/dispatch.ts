import { idParams } from "../../contract/common.js";
import { GuildMessage, GuildMessageList, GuildMessageRequest } from "../../contract/schedules.js";
import type { GuildDispatch } from "../../dispatch/service.js";
import { route, type AnyRoute } from "../route.js";

export function dispatchRoutes(dispatch: GuildDispatch): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/guilds/:id/messages",
      id: "guilds.message",
      tag: "guilds",
      summary:
        "A message to the guild, queued durably: a turn of the least busy agent's conversation with the guild (then in turn), or of every agent's with fan_out",
      params: idParams("gld"),
      body: GuildMessageRequest,
      status: 202,
      response: GuildMessage,
      errors: ["run.input_too_large", "access.denied"],
      handler: ({ who, params, body }) => dispatch.post(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/guilds/:id/messages",
      id: "guilds.messages",
      tag: "guilds",
      summary: "The guild's messages, newest first, each with where it went",
      params: idParams("gld"),
      response: GuildMessageList,
      handler: async ({ who, params }) => ({ items: await dispatch.list(who, params.id) }),
    }),
  ];
}
