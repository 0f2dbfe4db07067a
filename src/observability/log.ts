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
  "WARREN_OIDC_CLIENT_SECRET",
  "*.WARREN_OIDC_CLIENT_SECRET",
  "DATABASE_URL",
  "*.DATABASE_URL",
  "databaseUrl",
  "*.databaseUrl",
];

/**
 * A pino logger. `filter`, when given, sees every line before it is written (the server
 * passes the redaction of every secret value it holds).
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  filter?: (line: string) => string,
): Logger {
  const out = filter ? (destination ?? pino.destination(1)) : destination;
  return pino(
    {
      level,
      base: { service: "warren" },
      redact: { paths: redactPaths, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    filter && out ? { write: (line: string) => out.write(filter(line)) } : out,
  );
}

export type { Logger };
