// Schedules: standing orders to run an agent (cron in a time zone, or every N seconds).
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  List,
  Schedule,
  ScheduleCreateRequest,
  ScheduleTriggered,
  ScheduleUpdateRequest,
} from "./types.js";

export class SchedulesApi {
  constructor(private readonly http: Transport) {}

  /** A schedule on the agent: `{cron}` or `{every_s}`, and the run it starts (default `kind: "agent"`). */
  create(agentId: string, body: ScheduleCreateRequest, opts: RequestOptions = {}): Promise<Schedule> {
    return this.http.json("POST", `/api/agents/${seg(agentId)}/schedules`, { ...opts, json: body });
  }
  /** The agent's schedules, newest first. */
  list(agentId: string, opts: RequestOptions = {}): Promise<List<Schedule>> {
    return this.http.json("GET", `/api/agents/${seg(agentId)}/schedules`, opts);
  }
  get(id: string, opts: RequestOptions = {}): Promise<Schedule> {
    return this.http.json("GET", `/api/schedules/${seg(id)}`, opts);
  }
  /** Changes any field; `{paused: false}` clears its failures. */
  update(id: string, body: ScheduleUpdateRequest, opts: RequestOptions = {}): Promise<Schedule> {
    return this.http.json("PATCH", `/api/schedules/${seg(id)}`, { ...opts, json: body });
  }
  /** Starts a run of it now, whatever its overlap policy. */
  trigger(id: string, opts: RequestOptions = {}): Promise<ScheduleTriggered> {
    return this.http.json("POST", `/api/schedules/${seg(id)}/trigger`, opts);
  }
  /** Deletes it; its runs stay, with their schedule_id. */
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/schedules/${seg(id)}`, opts);
  }
}

/** One agent's schedules. */
export class AgentSchedules {
  constructor(
    private readonly api: SchedulesApi,
    private readonly agentId: string,
  ) {}

  create(body: ScheduleCreateRequest, opts: RequestOptions = {}): Promise<Schedule> {
    return this.api.create(this.agentId, body, opts);
  }
  list(opts: RequestOptions = {}): Promise<List<Schedule>> {
    return this.api.list(this.agentId, opts);
  }
}
