import { PassThrough } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { BoundedOutput } from "../../workloads/index.js";
import type { Exec } from "../../exec/service.js";
import type { StreamBudget } from "../streams.js";
import { route, type AnyRoute } from "../route.js";
import { idParams } from "../../contract/common.js";
import { ExecRequest, ExecResult, ExecStreamEvent } from "../../contract/exec.js";

/** The most a buffered answer keeps of each stream; streaming answers have no such limit. */
export const BUFFERED_OUTPUT_LIMIT = 8 * 1024 * 1024;

/** The exec route; a streamed answer (NDJSON) holds a slot of `streams` while it is open. */
export function execRoutes(exec: Exec, streams?: StreamBudget): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/exec",
      id: "agents.exec",
      tag: "exec",
      summary:
        "Run a command in the agent's box as the agent (buffered, or NDJSON with Accept: application/x-ndjson)",
      params: idParams("agt"),
      body: ExecRequest,
      response: ExecResult,
      stream: { type: "application/x-ndjson", schema: ExecStreamEvent },
      errors: ["access.denied", "box.unavailable", "stream.too_many", "generation.busy"],
      handler: async ({ who, params, body, req, reply }) => {
        const start = await exec.prepare(who, params.id, body);
        const streamed = (req.headers.accept ?? "").includes("application/x-ndjson");
        // refused (429 stream.too_many) before the command starts and anything is sent
        const release = streamed ? streams?.acquire(who) : undefined;
        const abort = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) abort.abort(new Error("client went away"));
        };
        reply.raw.on("close", onClose);
        if (release) reply.raw.once("close", release);
        if (streamed) {
          const out = new PassThrough();
          const line = (o: unknown) => out.write(`${JSON.stringify(o)}\n`);
          reply.type("application/x-ndjson").header("cache-control", "no-store");
          void reply.send(out);
          const dec = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
          const emit = (stream: "stdout" | "stderr", data: string) => {
            if (data.length > 0) line({ stream, data });
          };
          try {
            const r = await start({
              signal: abort.signal,
              onStdout: (c) => emit("stdout", dec.stdout.write(c)),
              onStderr: (c) => emit("stderr", dec.stderr.write(c)),
            });
            emit("stdout", dec.stdout.end());
            emit("stderr", dec.stderr.end());
            line({
              exit_code: r.exitCode,
              signal: r.signal,
              duration_ms: r.durationMs,
              timed_out: r.timedOut,
            });
          } catch (err) {
            const e = err as { code?: string; message?: string };
            line({
              error: {
                code: typeof e.code === "string" && e.code.includes(".") ? e.code : "internal",
                message: e.message ?? "exec failed",
              },
            });
            req.log.error({ err }, "streamed exec failed");
          } finally {
            out.end();
            release?.();
          }
          return reply;
        }
        const stdout = new BoundedOutput(BUFFERED_OUTPUT_LIMIT);
        const stderr = new BoundedOutput(BUFFERED_OUTPUT_LIMIT);
        const r = await start({
          signal: abort.signal,
          onStdout: (c) => stdout.push(c),
          onStderr: (c) => stderr.push(c),
        });
        return {
          exit_code: r.exitCode,
          signal: r.signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          duration_ms: r.durationMs,
          timed_out: r.timedOut,
          stdout_truncated: stdout.truncated,
          stderr_truncated: stderr.truncated,
        };
      },
    }),
  ];
}
