// One server per STATE_ROOT: a pid file made with O_EXCL under STATE_ROOT/run, holding
// the owner's pid and its start time (so a reused pid is never mistaken for a live
// server). A file left by a server that died is taken over.
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
  release(): void;
}

/** Takes STATE_ROOT's lock or throws StateLockError naming the server that holds it. */
export function lockStateRoot(stateRoot: string, runDir: string): StateLock {
  const file = path.join(runDir, "server.pid");
  const mine = `${process.pid} ${startTime(process.pid) ?? "?"}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, mine, { flag: "wx", mode: 0o600 });
      let released = false;
      return {
        file,
        release() {
          if (released) return;
          released = true;
          try {
            if (fs.readFileSync(file, "utf8") === mine) fs.rmSync(file, { force: true });
          } catch {
            // already gone
          }
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
      throw new StateLockError(
        `another warren server (pid ${pid}) is using STATE_ROOT ${stateRoot}; stop it first, or give this one another STATE_ROOT`,
      );
    }
    // left by a server that is gone
    fs.rmSync(file, { force: true });
  }
  throw new StateLockError(`cannot take the lock ${file}`);
}
