import { idParams } from "../../contract/common.js";
import { Budgets, BudgetsRequest } from "../../contract/budgets.js";
import type { Budgets as BudgetsService } from "../../budgets/ledger.js";
import { route, type AnyRoute } from "../route.js";

export function budgetRoutes(budgets: BudgetsService): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/orgs/:id/budgets",
      id: "budgets.get",
      tag: "budgets",
      summary:
        "The organisation's budgets (per day and month, of the organisation and per agent), with what each period used",
      params: idParams("org"),
      response: Budgets,
      handler: ({ who, params }) => budgets.get(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/orgs/:id/budgets",
      id: "budgets.put",
      tag: "budgets",
      summary: "Write every budget of the organisation (owners and admins)",
      params: idParams("org"),
      body: BudgetsRequest,
      response: Budgets,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => budgets.put(who, params.id, body),
    }),
  ];
}
