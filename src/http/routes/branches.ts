import { idParams } from "../../contract/common.js";
import {
  Conversation,
  ConversationDiff,
  ConversationForkRequest,
  ConversationLanded,
} from "../../contract/conversations.js";
import type { Conversations } from "../../conversations/index.js";
import { route, type AnyRoute } from "../route.js";

/** A conversation's branch: its diff against its base, landing it, and forking the conversation with it. */
export function branchRoutes(conversations: Conversations): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/conversations/:id/diff",
      id: "conversations.diff",
      tag: "conversations",
      summary: "What the conversation's branch changed against its base: ahead, behind, files and the patch",
      params: idParams("cnv"),
      response: ConversationDiff,
      errors: ["access.denied", "generation.busy"],
      handler: ({ who, params }) => conversations.diff(who, params.id),
    }),
    route({
      method: "POST",
      url: "/api/conversations/:id/land",
      id: "conversations.land",
      tag: "conversations",
      summary:
        "Merge the conversation's branch into its base (owners and admins); a conflict, or an uncommitted change it would overwrite, is 409 branch.conflict with the files and changes nothing",
      params: idParams("cnv"),
      response: ConversationLanded,
      errors: ["access.denied", "branch.conflict", "generation.busy"],
      handler: ({ who, params }) => conversations.land(who, params.id),
    }),
    route({
      method: "POST",
      url: "/api/conversations/:id/fork",
      id: "conversations.fork",
      tag: "conversations",
      summary:
        "A new conversation with this one's messages up to at_message (default: all), its persona, areas and version; with a branch, a new branch from its head holding its uncommitted changes",
      params: idParams("cnv"),
      body: ConversationForkRequest,
      status: 201,
      response: Conversation,
      errors: ["access.denied", "area.refused", "generation.busy"],
      handler: ({ who, params, body }) => conversations.fork(who, params.id, body.at_message),
    }),
  ];
}
