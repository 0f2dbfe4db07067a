import { PassThrough } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { BoundedOutput } from "../../exec/output.js";
import type { Exec } from "../../exec/service.js";
import { route, type AnyRoute } from "../route.js";
import { idParams } from "../schemas.js";

/** The most a buffered answer keeps of each stream; streaming answers have no such limit. */
export const BUFFERED_OUTPUT_LIMIT = 8 * 1024 * 1024;

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A command's own limits (exec and runs), tighter than its machine's. */
export const commandLimits = z
  .object({
    memory_mib: z.number().int().min(16, "must be at least 16").max(262144).optional(),
    pids: z.number().int().min(1).max(4096).optional(),
  })
  .strict()
  .optional();

export const execBody = z
  .object({
    argv: z
      .array(
        z
          .string()
          .max(128 * 1024)
          .refine((a) => !a.includes("\0"), "must not hold NUL"),
      )
      .min(1)
      .max(4096)
      .optional(),
    command: z
      .string()
      .min(1)
      .max(256 * 1024)
      .refine((a) => !a.includes("\0"), "must not hold NUL")
      .optional(),
    cwd: z
      .string()
      .max(4096)
      .refine((a) => !a.includes("\0"), "must not hold NUL")
      .optional(),
    env: z
      .record(
        z.string().regex(envName, "names must match [A-Za-z_][A-Za-z0-9_]*").max(256),
        z
          .string()
          .max(128 * 1024)
          .refine((a) => !a.includes("\0"), "must not hold NUL"),
      )
      .optional(),
    stdin: z
      .string()
      .max(8 * 1024 * 1024)
      .optional(),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(24 * 3600 * 1000)
      .optional(),
    limits: commandLimits,
  })
  .strict()
  .refine((b) => (b.argv === undefined) !== (b.command === undefined), {
    message: "give exactly one of argv or command",
    path: ["argv"],
  });

const result = z.object({
  exit_code: z.number().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  duration_ms: z.number(),
  timed_out: z.boolean(),
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
});

export function execRoutes(exec: Exec): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/exec",
      tag: "exec",
      summary:
        "Run a command in the agent's box as the agent (buffered, or NDJSON with Accept: application/x-ndjson)",
      params: idParams("agt"),
      body: execBody,
      response: result,
      errors: ["access.denied", "box.unavailable"],
      handler: async ({ who, params, body, req, reply }) => {
        const start = await exec.prepare(who, params.id, body);
        const abort = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) abort.abort(new Error("client went away"));
        };
        reply.raw.on("close", onClose);
        if ((req.headers.accept ?? "").includes("application/x-ndjson")) {
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
