// A command's io with every secret that reached it redacted from stdout and stderr (each a
// stream of its own, so a value split across chunks is caught); `flush` lets out what was
// held back once the command ended. A value the agent stores while the command runs
// (warren-secret store) joins the redaction from then on: `follow` adds a stage after the
// ones already there, until flush. Only the door (index.ts) uses it.
import { SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import type { ExecIo } from "../runtime/index.js";
import { Redactor, type RedactStream } from "../secrets/redact.js";
import type { ResolvedSecrets } from "../secrets/service.js";

export function redactedIo<T extends ExecIo>(
  io: T,
  secrets: Pick<ResolvedSecrets, "redactor" | "follow">,
): T & { flush(): void } {
  const out: RedactStream[] = [];
  const err: RedactStream[] = [];
  const add = (r: Redactor) => {
    if (r.size === 0) return;
    out.push(r.stream());
    err.push(r.stream());
  };
  add(secrets.redactor);
  const stop = secrets.follow?.((value) => add(new Redactor([value], SECRET_VALUE_MIN_BYTES)));
  if (out.length === 0 && !stop) return { ...io, flush: () => {} };
  const through = (stages: RedactStream[], b: Buffer) => {
    for (const s of stages) b = s.push(b);
    return b;
  };
  const finish = (stages: RedactStream[]) => {
    let b: Buffer = Buffer.alloc(0);
    for (const s of stages) {
      const a = s.push(b);
      const z = s.end();
      b = z.length === 0 ? a : Buffer.concat([a, z]);
    }
    return b;
  };
  const give = (to: ((c: Buffer) => void) | undefined, b: Buffer) => {
    if (b.length > 0) to?.(b);
  };
  return {
    ...io,
    onStdout: (c: Buffer) => give(io.onStdout, through(out, c)),
    onStderr: (c: Buffer) => give(io.onStderr, through(err, c)),
    flush: () => {
      stop?.();
      give(io.onStdout, finish(out));
      give(io.onStderr, finish(err));
    },
  };
}
