import { idParams } from "../../contract/common.js";
import { ConversationDiff, ConversationLanded } from "../../contract/conversations.js";
import type { Conversations } from "../../conversations/index.js";
import { route, type AnyRoute } from "../route.js";

/** A conversation's branch: its diff against its base, and landing it. */
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
      errors: ["access.denied"],
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
      errors: ["access.denied", "branch.conflict"],
      handler: ({ who, params }) => conversations.land(who, params.id),
    }),
  ];
}
