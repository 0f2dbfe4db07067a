// Prometheus metrics, one registry per server (no process-global state).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "warren_http_requests_total",
    help: "HTTP requests answered, by method, route and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: "warren_http_request_duration_seconds",
    help: "HTTP request latency, by method and route",
    labelNames: ["method", "route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: "warren_http_errors_total",
    help: "HTTP error answers, by stable error code",
    labelNames: ["code"] as const,
    registers: [this.registry],
  });
  readonly execs = new Counter({
    name: "warren_execs_total",
    help: "Commands run in boxes, by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly boxStarts = new Histogram({
    name: "warren_box_start_seconds",
    help: "Time to start a machine's box until boxd answers",
    buckets: [0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  readonly boxResumes = new Histogram({
    name: "warren_box_resume_seconds",
    help: "Time to resume a machine's paused box until boxd answers",
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [this.registry],
  });

  // Box health, sampled every few seconds from the boxes' cgroups; labelled by machine and
  // organisation only (one series per running box).
  readonly boxCpu = this.#boxGauge(
    "warren_box_cpu_seconds",
    "CPU time the machine's running box has used since it started",
  );
  readonly boxMemory = this.#boxGauge(
    "warren_box_memory_bytes",
    "Memory the machine's running box uses now (cgroup accounting: page cache and tmpfs count)",
  );
  readonly boxMemoryPeak = this.#boxGauge(
    "warren_box_memory_peak_bytes",
    "The highest memory use of the machine's running box since it started",
  );
  readonly boxPids = this.#boxGauge(
    "warren_box_pids",
    "Processes and threads in the machine's running box now",
  );
  readonly boxAtLimit = this.#boxGauge(
    "warren_box_at_limit",
    "1 while the agents of the machine's box are at their pids or memory limit",
  );
  readonly boxRunaways = new Counter({
    name: "warren_box_runaways_total",
    help: "Runaway command trees stopped, by machine, organisation and limit",
    labelNames: ["machine", "org", "limit"] as const,
    registers: [this.registry],
  });

  constructor(defaults = true) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: "warren_" });
  }

  #boxGauge(name: string, help: string): Gauge<"machine" | "org"> {
    return new Gauge({ name, help, labelNames: ["machine", "org"] as const, registers: [this.registry] });
  }
}
