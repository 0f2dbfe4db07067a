// One server per STATE_ROOT: an flock on STATE_ROOT/run/server.lock, held for the server's
// life by a child `flock` (util-linux) that ends when this process does (its stdin closes),
// so the kernel says whether a server holds it, across containers and pid namespaces that
// share the state volume too. STATE_ROOT/run/server.pid names the holder (its pid and start
// time) for the refusal. Without `flock` on the host: the pid file alone, made with O_EXCL
// (a reused pid is never mistaken for a live server; a dead server's file is taken over).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export class StateLockError extends Error {
  override name = "StateLockError";
}

function startTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

export interface StateLock {
  file: string;
  /** Gives the lock back; resolves once another server may take it. */
  release(): Promise<void>;
}

const refusal = (stateRoot: string, pid: string) =>
  new StateLockError(
    `another warren server (pid ${pid}) is using STATE_ROOT ${stateRoot}; stop it first, or give this one another STATE_ROOT`,
  );

/** The exit code `flock` answers when another holds the lock. */
const BUSY = 75;

/** An flock on `file` held by a child until it is killed or this process ends; "busy", or "missing" without flock. */
function holdFlock(file: string): Promise<ChildProcess | "busy" | "missing"> {
  return new Promise((resolve, reject) => {
    // its own process group: a terminal's ^C reaches the server, which releases in its own time
    const child = spawn(
      "flock",
      [
        "--nonblock",
        "--conflict-exit-code",
        String(BUSY),
        "--no-fork",
        file,
        "sh",
        "-c",
        "echo held; exec cat >/dev/null",
      ],
      { stdio: ["pipe", "pipe", "pipe"], detached: true },
    );
    let err = "";
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    child.once("error", (e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? resolve("missing") : reject(e)));
    child.once("exit", (code) =>
      code === BUSY
        ? resolve("busy")
        : reject(new StateLockError(`cannot take the lock ${file}: ${err.trim() || `flock exited ${code}`}`)),
    );
    child.stdout.once("data", () => {
      child.removeAllListeners("exit");
      child.stdout.destroy();
      child.stderr.destroy();
      child.unref();
      (child.stdin as unknown as { unref(): void }).unref();
      resolve(child);
    });
  });
}

/** Takes STATE_ROOT's lock or throws StateLockError naming the server that holds it. */
export async function lockStateRoot(stateRoot: string, runDir: string): Promise<StateLock> {
  const held = await holdFlock(path.join(runDir, "server.lock"));
  if (held === "missing") return pidFileLock(stateRoot, runDir);
  const file = path.join(runDir, "server.pid");
  if (held === "busy") {
    let pid = "unknown";
    try {
      pid = fs.readFileSync(file, "utf8").trim().split(" ")[0] || pid;
    } catch {
      // the holder has not written it yet
    }
    throw refusal(stateRoot, pid);
  }
  const mine = `${process.pid} ${startTime(process.pid) ?? "?"}\n`;
  fs.writeFileSync(file, mine, { mode: 0o600 });
  let released: Promise<void> | undefined;
  return {
    file,
    release() {
      released ??= new Promise<void>((resolve) => {
        try {
          if (fs.readFileSync(file, "utf8") === mine) fs.rmSync(file, { force: true });
        } catch {
          // already gone
        }
        if (held.exitCode !== null || held.signalCode !== null) return resolve();
        held.once("exit", () => resolve());
        held.ref(); // its end is waited for
        held.kill("SIGKILL");
      });
      return released;
    },
  };
}

/** The lock as a pid file alone (no `flock` here). */
function pidFileLock(stateRoot: string, runDir: string): StateLock {
  const file = path.join(runDir, "server.pid");
  const mine = `${process.pid} ${startTime(process.pid) ?? "?"}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, mine, { flag: "wx", mode: 0o600 });
      let released = false;
      return {
        file,
        release() {
          if (released) return Promise.resolve();
          released = true;
          try {
            if (fs.readFileSync(file, "utf8") === mine) fs.rmSync(file, { force: true });
          } catch {
            // already gone
          }
          return Promise.resolve();
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let text = "";
    try {
      text = fs.readFileSync(file, "utf8");
    } catch {
      continue; // removed meanwhile: try again
    }
    const [pidText, start] = text.trim().split(" ");
    const pid = Number(pidText);
    if (Number.isInteger(pid) && pid > 0 && start !== undefined && startTime(pid) === start) {
      throw refusal(stateRoot, String(pid));
    }
    // left by a server that is gone
    fs.rmSync(file, { force: true });
  }
  throw new StateLockError(`cannot take the lock ${file}`);
}
