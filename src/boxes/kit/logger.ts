// What every provider is given to say what it did and what went wrong off the caller's
// path (a box started, a clean-up that failed), and where the package's own files are.
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface LoggerLike {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** The package's root (dist/native holds boxd and its helpers). */
export const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
