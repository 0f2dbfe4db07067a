// The budgets' types: a call's refusal (by the run's own budget or an organisation's) and the
// organisations' ledger, which the model gateway reserves in before every call.

/** A call refused before it was sent: what was used, reserved by calls under way, and its maximum. */
export interface BudgetRefusal {
  ok: false;
  limit: "tokens" | "usd";
  max: number;
  used: number;
  reserved: number;
  call_max: number;
  on_limit: "stop" | "finish";
  /** Set when the limit is an organisation's budget (of the organisation or of the agent), not the run's. */
  scope?: "organisation" | "agent";
  period?: "day" | "month";
}

/** A call an organisation's budget refused: of the organisation or of the agent, for a day or a month. */
export type OrgBudgetRefusal = BudgetRefusal & {
  scope: "organisation" | "agent";
  period: "day" | "month";
  on_limit: "stop";
};

/** A call's reservation in the organisation's budgets: let go once the call is counted. */
export type OrgReservation =
  { ok: true; release(): Promise<void> } | { ok: false; refusal: OrgBudgetRefusal };

/**
 * The organisations' budgets (per day and per month, of the organisation and per agent), held
 * in the database: a call's maximum is reserved before it is sent (all or nothing, the rows
 * locked), its real usage is counted once it is recorded.
 */
export interface OrgBudgetLedger {
  reserve(
    who: { orgId: string; agentId: string },
    est: { tokens: number; usd: number },
  ): Promise<OrgReservation>;
  spend(who: { orgId: string; agentId: string }, used: { tokens: number; usd: number }): Promise<void>;
}
