// Logs are pino JSON. Secret-bearing fields are redacted here, centrally, whatever logs them.
import pino, { type Logger } from "pino";

export const redactPaths = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-warren-token"]',
  "value",
  "*.value",
  "secret",
  "*.secret",
  "password",
  "*.password",
  "token",
  "*.token",
  "env",
  "*.env",
  "*.*.env",
  "stdin",
  "*.stdin",
  "input",
  "*.input",
  "masterKey",
  "*.masterKey",
  "WARREN_MASTER_KEY",
  "*.WARREN_MASTER_KEY",
  "DATABASE_URL",
  "*.DATABASE_URL",
  "databaseUrl",
  "*.databaseUrl",
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "warren" },
      redact: { paths: redactPaths, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
