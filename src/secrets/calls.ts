// Agents' calls from inside their box (warren-secret, through boxd's calls socket): who
// calls is the machine and the uid boxd saw for the connection, never anything the
// command sends. `list` gives the names and descriptions that reach the agent; `store`
// saves a file of its own home as a secret granted to it alone. No answer ever holds a
// value.
import type { AgentAtUid } from "../machines/placement.js";
import { parseAgentCall, ProtocolError, type CallAnswer, type CallMessage } from "../runtime/index.js";
import { secretName, SECRET_VALUE_MAX_BYTES, SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import { WarrenError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { Secrets } from "./service.js";

/**
 * Reads a regular file of an agent's home, no link followed, at most maxBytes (the homes'
 * readHomeFile over parseHomePath): its errors are the homes' (file.*, request.invalid).
 */
export type HomeFileReader = (
  machineId: string,
  agentId: string,
  path: string,
  maxBytes: number,
) => Promise<Buffer>;

export interface AgentCallsOptions {
  secrets: Secrets;
  /** Who runs as a uid of a machine (machines/uids.ts). */
  agentAt: AgentAtUid;
  readHomeFile: HomeFileReader;
  logger: Logger;
}

/** warren-secret's exit codes. */
const EXIT = { ok: 0, refused: 1, usage: 2, unavailable: 69 } as const;

const refused = (code: string, message: string, exit: number = EXIT.refused): CallAnswer => ({
  exit,
  stderr: `warren-secret: ${code}: ${message}\n`,
});

/** The text of a stored file as a value: one trailing newline (as `echo` writes) is not part of it. */
function valueOf(bytes: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new WarrenError("request.invalid", "the file is not UTF-8 text; a secret's value is text");
  }
  text = text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
  const n = Buffer.byteLength(text, "utf8");
  if (text.includes("\0")) throw new WarrenError("request.invalid", "the file holds a NUL byte");
  if (n < SECRET_VALUE_MIN_BYTES)
    throw new WarrenError(
      "request.invalid",
      `the file holds ${n} bytes (without a final newline); a secret is at least ${SECRET_VALUE_MIN_BYTES}`,
    );
  return text;
}

export class AgentCalls {
  private readonly secrets: Secrets;
  private readonly agentAt: AgentAtUid;
  private readonly readHomeFile: HomeFileReader;
  private readonly logger: Logger;

  constructor(o: AgentCallsOptions) {
    this.secrets = o.secrets;
    this.agentAt = o.agentAt;
    this.readHomeFile = o.readHomeFile;
    this.logger = o.logger;
  }

  /** Answers one call from the machine's box; the caller is the agent whose uid boxd saw. */
  async handle(machineId: string, call: CallMessage): Promise<CallAnswer> {
    const agent = await this.agentAt(machineId, call.uid);
    if (!agent) return refused("not_found", `no agent of this machine runs as uid ${call.uid}`);
    let req;
    try {
      req = parseAgentCall(call.request);
    } catch (err) {
      if (err instanceof ProtocolError) return refused("request.invalid", err.message, EXIT.usage);
      throw err;
    }
    try {
      if (req.op === "list") {
        const names = await this.secrets.namesFor(agent);
        return {
          exit: EXIT.ok,
          stdout: names
            // one secret a line: a description's own newlines and tabs become spaces
            .map((n) => {
              const d = n.description.replace(/[\n\t]/g, " ");
              return d ? `${n.name}\t${d}\n` : `${n.name}\n`;
            })
            .join(""),
        };
      }
      const name = secretName.safeParse(req.name);
      if (!name.success)
        return refused("request.invalid", `name ${name.error.issues[0]?.message ?? "is not accepted"}`);
      const bytes = await this.readHomeFile(machineId, agent.id, req.path, SECRET_VALUE_MAX_BYTES + 2);
      const value = valueOf(bytes);
      if (Buffer.byteLength(value, "utf8") > SECRET_VALUE_MAX_BYTES)
        throw new WarrenError("file.too_large", `a secret is at most ${SECRET_VALUE_MAX_BYTES} bytes`);
      const id = await this.secrets.storeFromAgent(agent, name.data, value);
      this.logger.info(
        { machineId, agentId: agent.id, secretId: id, name: name.data },
        "an agent stored a secret",
      );
      return {
        exit: EXIT.ok,
        stdout: `stored ${name.data} (${id}), granted to this agent; its next commands get it as $${name.data}\n`,
      };
    } catch (err) {
      if (err instanceof WarrenError) return refused(err.code, err.message);
      this.logger.error({ err, machineId, agentId: agent.id }, "an agent's call failed");
      return refused("internal", "the server could not answer; try again", EXIT.unavailable);
    }
  }
}
