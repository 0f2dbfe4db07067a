// Flows (named sets of agents) and their instances (one working each, with its own shared
// /workspace, kept when it ends): their calls.
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  Conversation,
  Flow,
  FlowConversationCreateRequest,
  FlowCreateRequest,
  FlowInstance,
  FlowInstanceCreateRequest,
  FlowReloadResponse,
  FlowRunCreateRequest,
  FlowUpdateRequest,
  List,
  Run,
} from "./types.js";

export class FlowsApi {
  constructor(private readonly http: Transport) {}

  create(body: FlowCreateRequest, opts: RequestOptions = {}): Promise<Flow> {
    return this.http.json("POST", "/api/flows", { ...opts, json: body });
  }
  /** The organisation's flows, newest first. */
  list(orgId: string, opts: RequestOptions = {}): Promise<List<Flow>> {
    return this.http.json("GET", `/api/flows?org_id=${encodeURIComponent(orgId)}`, opts);
  }
  get(id: string, opts: RequestOptions = {}): Promise<Flow> {
    return this.http.json("GET", `/api/flows/${seg(id)}`, opts);
  }
  /** Renames a flow made through the API or changes its agents (a contract flow: 409 flow.from_contract). */
  update(id: string, body: FlowUpdateRequest, opts: RequestOptions = {}): Promise<Flow> {
    return this.http.json("PATCH", `/api/flows/${seg(id)}`, { ...opts, json: body });
  }
  /** Reads the flow contracts folder again (owner or admin): the flows made or brought to their contracts. */
  reload(opts: RequestOptions = {}): Promise<FlowReloadResponse> {
    return this.http.json("POST", "/api/flows/reload", opts);
  }
  /** Starts an instance of the flow, with its own shared /workspace. */
  start(
    flowId: string,
    body: FlowInstanceCreateRequest = {},
    opts: RequestOptions = {},
  ): Promise<FlowInstance> {
    return this.http.json("POST", `/api/flows/${seg(flowId)}/instances`, { ...opts, json: body });
  }
  /** The flow's instances, newest first. */
  instances(flowId: string, opts: RequestOptions = {}): Promise<List<FlowInstance>> {
    return this.http.json("GET", `/api/flows/${seg(flowId)}/instances`, opts);
  }
  instance(id: string, opts: RequestOptions = {}): Promise<FlowInstance> {
    return this.http.json("GET", `/api/flow-instances/${seg(id)}`, opts);
  }
  /** A run of one of the flow's agents inside the instance (its /workspace is the instance's). */
  run(instanceId: string, body: FlowRunCreateRequest, opts: RequestOptions = {}): Promise<Run> {
    return this.http.json("POST", `/api/flow-instances/${seg(instanceId)}/runs`, { ...opts, json: body });
  }
  /** A conversation with one of the flow's agents inside the instance. */
  converse(
    instanceId: string,
    body: FlowConversationCreateRequest,
    opts: RequestOptions = {},
  ): Promise<Conversation> {
    return this.http.json("POST", `/api/flow-instances/${seg(instanceId)}/conversations`, {
      ...opts,
      json: body,
    });
  }
  /** Ends the instance; its workspace is kept (the answer says where). */
  end(instanceId: string, opts: RequestOptions = {}): Promise<FlowInstance> {
    return this.http.json("POST", `/api/flow-instances/${seg(instanceId)}/end`, opts);
  }
}
