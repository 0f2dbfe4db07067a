// An agent's versions, canary and evaluations, and the approvals of tool calls.
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  Approval,
  ApprovalDecision,
  Canary,
  CanaryRequest,
  EvalRun,
  EvalSuite,
  EvalSuiteRequest,
  List,
  Version,
  VersionCreateRequest,
  VersionSummary,
} from "./types.js";

export class AgentVersions {
  constructor(
    private readonly http: Transport,
    private readonly agentId: string,
  ) {}

  private url(rest = ""): string {
    return `/api/agents/${seg(this.agentId)}${rest}`;
  }

  list(opts: RequestOptions = {}): Promise<List<VersionSummary>> {
    return this.http.json("GET", this.url("/versions"), opts);
  }
  /** One version: the whole spec, sandbox policy included. */
  get(version: number, opts: RequestOptions = {}): Promise<Version> {
    return this.http.json("GET", this.url(`/versions/${version}`), opts);
  }
  /** Writes a version from the current one and the fields given; current only with make_current. */
  create(body: VersionCreateRequest, opts: RequestOptions = {}): Promise<{ version: number }> {
    return this.http.json("POST", this.url("/versions"), { ...opts, json: body });
  }
  /** Promotes or rolls back; `version.gate` when the gate is on and it has not passed. */
  makeCurrent(version: number, opts: RequestOptions = {}): Promise<Version> {
    return this.http.json("PUT", this.url("/current"), { ...opts, json: { version } });
  }
  canary(opts: RequestOptions = {}): Promise<Canary> {
    return this.http.json("GET", this.url("/canary"), opts);
  }
  /** Starts or changes the canary; `{}` ends it. */
  setCanary(body: CanaryRequest, opts: RequestOptions = {}): Promise<Canary> {
    return this.http.json("PUT", this.url("/canary"), { ...opts, json: body });
  }
  saveSuite(body: EvalSuiteRequest, opts: RequestOptions = {}): Promise<EvalSuite> {
    return this.http.json("POST", this.url("/evals"), { ...opts, json: body });
  }
  suites(opts: RequestOptions = {}): Promise<List<EvalSuite>> {
    return this.http.json("GET", this.url("/evals"), opts);
  }
  /** Starts an evaluation of a version by a suite; follow it with `evalRun`. */
  evaluate(version: number, suite: string, opts: RequestOptions = {}): Promise<{ eval_run_id: string }> {
    return this.http.json("POST", this.url(`/versions/${version}/evaluate`), { ...opts, json: { suite } });
  }
  evalRun(id: string, opts: RequestOptions = {}): Promise<EvalRun> {
    return this.http.json("GET", `/api/eval-runs/${seg(id)}`, opts);
  }
}

export class ApprovalsApi {
  constructor(private readonly http: Transport) {}

  ofRun(runId: string, opts: RequestOptions = {}): Promise<List<Approval>> {
    return this.http.json("GET", `/api/runs/${seg(runId)}/approvals`, opts);
  }
  /** The organisation's approvals; `mine`: only those waiting for the caller's decision. */
  ofOrg(
    orgId: string,
    status?: Approval["status"],
    opts: RequestOptions & { mine?: boolean } = {},
  ): Promise<List<Approval>> {
    const { mine, ...rest } = opts;
    return this.http.json("GET", `/api/orgs/${seg(orgId)}/approvals`, {
      ...rest,
      query: { ...(status ? { status } : {}), ...(mine ? { mine: "true" } : {}) },
    });
  }
  /** Decides a waiting call; `args_sha256` must be the approval's (else `approval.stale`). */
  decide(id: string, body: ApprovalDecision, opts: RequestOptions = {}): Promise<Approval> {
    return this.http.json("POST", `/api/approvals/${seg(id)}`, { ...opts, json: body });
  }
  /** Answers an agent's waiting secret_request with the value (a secret granted to that agent). */
  secret(
    id: string,
    body: { value: string; args_sha256: string },
    opts: RequestOptions = {},
  ): Promise<Approval> {
    return this.http.json("POST", `/api/approvals/${seg(id)}/secret`, { ...opts, json: body });
  }
}
