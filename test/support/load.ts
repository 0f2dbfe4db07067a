// Keeps this host's cores busy for a test of what must hold on a loaded host: one spinning
// shell per core (outside every box), ended by pid when the test is done.
import { spawn, type ChildProcess } from "node:child_process";
import os from "node:os";

export interface CoreLoad {
  /** Ends the spinners (each by its pid) and waits for them to be gone. */
  stop(): Promise<void>;
}

export function loadCores(count = os.availableParallelism()): CoreLoad {
  const spinners: ChildProcess[] = [];
  for (let i = 0; i < count; i++)
    spinners.push(spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore", detached: false }));
  return {
    async stop() {
      await Promise.all(
        spinners.map(
          (p) =>
            new Promise<void>((resolve) => {
              if (p.exitCode !== null || p.signalCode !== null) return resolve();
              p.once("exit", () => resolve());
              p.kill("SIGKILL");
            }),
        ),
      );
    },
  };
}
