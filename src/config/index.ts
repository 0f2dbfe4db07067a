// The environment, as one zod schema. Parsed in main (never at import), so tests pass
// their own configuration instead of mocking process.env.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { parseNetworkEntry } from "../contract/policy.js";
import { HARNESS_KINDS } from "../contract/lists.js";
import { parseOutboundProxy } from "../net/proxy.js";

/** Unset STATE_ROOT: the checkout's `.state` (absolute, wherever the server starts). */
const defaultStateRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../.state");

/** The boot checks (src/boot): each can be accepted as missing with WARREN_ALLOW_DEGRADED. */
export const BOOT_CHECK_NAMES = [
  "bubblewrap",
  "namespaces",
  "cgroups",
  "landlock",
  "seccomp",
  "protected_symlinks",
  "state",
  "data",
  "contracts",
  // every flow contract of WARREN_CONTRACTS parses and holds (the first that does not is named)
  "contracts_loaded",
  "policy",
  "workspace_class_exists",
  "workspaces",
  // WARREN_PROVIDER=oci: the engine answers at WARREN_OCI_SOCKET, the boxes' image exists, an
  // OCI runtime of the engine's runs a box on this host (WARREN_OCI_RUNTIME)
  "oci_engine",
  "oci_image",
  "oci_runtime",
  // WARREN_PROVIDER=kubernetes: the API server answers, the namespace and the storage class
  // exist, the workspaces claim exists and is ReadWriteMany, RBAC allows what warren does
  "k8s_api",
  "k8s_namespace",
  "k8s_storage_class",
  "k8s_workspaces_claim",
  "k8s_rbac",
] as const;
export type BootCheckName = (typeof BOOT_CHECK_NAMES)[number];

/** The OCI runtimes WARREN_OCI_RUNTIME may name (unset or empty: the first the host can run). */
export const OCI_RUNTIMES = ["runc", "crun"] as const;
export type OciRuntime = (typeof OCI_RUNTIMES)[number];

/** A text variable; empty is unset. */
const text = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === "" ? undefined : v));

/** A comma-separated list, each item trimmed, empty ones dropped; unset is empty. */
const commaList = () =>
  z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
    );

/** A comma-separated list of names, each one of `allowed`. */
function namesFrom<const T extends readonly string[]>(name: string, allowed: T) {
  return commaList()
    .refine((v) => v.every((x) => (allowed as readonly string[]).includes(x)), {
      message: `${name} is a comma-separated list of: ${allowed.join(", ")}`,
    })
    .transform((v) => v as T[number][]);
}

/** An OTLP/HTTP endpoint (http or https); empty is unset. */
const otlpUrl = text().refine((v) => v === undefined || /^https?:\/\/[^/\s]+/.test(v), {
  message: "an OTLP endpoint is an http:// or https:// URL (e.g. http://localhost:4318)",
});

const bool = z
  .enum(["0", "1", "true", "false", ""])
  .optional()
  .transform((v) => v === "1" || v === "true");

/** Dollars per million tokens in and out, keyed `provider:model`, `model` or `provider:*`. */
export const ModelPriceTable = z.record(
  z.string().min(1).max(300),
  z.object({ input_per_mtok: z.number().min(0), output_per_mtok: z.number().min(0) }).strict(),
);
export type ModelPriceTable = z.output<typeof ModelPriceTable>;

const modelPrices = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === "") return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      ctx.addIssue({ code: "custom", message: "WARREN_MODEL_PRICES must be a JSON object" });
      return z.NEVER;
    }
    const r = ModelPriceTable.safeParse(parsed);
    if (!r.success) {
      ctx.addIssue({
        code: "custom",
        message: `WARREN_MODEL_PRICES must map model names to {input_per_mtok, output_per_mtok}: ${r.error.issues[0]?.message ?? ""}`,
      });
      return z.NEVER;
    }
    return r.data;
  });

const mib = (name: string, def: number) =>
  z.coerce
    .number({ message: `${name} must be a whole number of MiB` })
    .int(`${name} must be a whole number of MiB`)
    .positive(`${name} must be above 0`)
    .default(def);

/**
 * A comma-separated list of IPs and CIDRs (and, where `ports`, `ip:port` or `[v6]:port`),
 * parsed to address ranges. Host names are refused: the list bounds addresses.
 */
function ipList(name: string, def: string, ports: boolean) {
  return z
    .string()
    .optional()
    .transform((v, ctx) => {
      const out: AddressRange[] = [];
      for (const text of (v ?? def)
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)) {
        const e = parseNetworkEntry(text);
        if (typeof e === "string" || e.kind !== "ip" || (!ports && e.port !== undefined)) {
          ctx.addIssue({
            code: "custom",
            message: `${JSON.stringify(text)} is not ${ports ? "an IP, a CIDR or ip:port" : "an IP or a CIDR"}${typeof e === "string" ? ` (${e})` : ""}`,
          });
          return z.NEVER;
        }
        out.push({ text, bytes: e.bytes, bits: e.bits, ...(e.port !== undefined ? { port: e.port } : {}) });
      }
      return out;
    });
}

/** An address range of the configuration: an IP (all its bits) or a CIDR, optionally one port. */
export interface AddressRange {
  text: string;
  bytes: number[];
  bits: number;
  port?: number;
}

export const configSchema = z
  .object({
    WARREN_HOST: z.string().min(1).default("127.0.0.1"),
    WARREN_PORT: z.coerce
      .number({ message: "WARREN_PORT must be a port number" })
      .int()
      .min(0, "WARREN_PORT must be between 0 and 65535")
      .max(65535, "WARREN_PORT must be between 0 and 65535")
      .default(8080),
    /**
     * The state tree, an absolute path: `make up` writes it to the checkout's `.env`, which
     * every start reads (src/config/dotenv.ts). Unset, the checkout's own `.state`.
     */
    STATE_ROOT: z
      .string()
      .min(1, "STATE_ROOT must name a folder")
      .refine((v) => path.isAbsolute(v), {
        message:
          "STATE_ROOT must be an absolute path, so that every start finds the same state tree and master key, wherever it is started from: set STATE_ROOT=$PWD/.state (or run `make up`, which writes it to .env)",
      })
      .default(defaultStateRoot),
    DATABASE_URL: text().refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
      message: "DATABASE_URL must be a postgres:// or postgresql:// URL, or unset for the embedded PGlite",
    }),
    /** local, oci, kubernetes, or a provider an extension registers (src/boxes/select.ts). */
    WARREN_PROVIDER: z
      .string()
      .regex(
        /^[a-z][a-z0-9-]{0,62}$/,
        "WARREN_PROVIDER must name a box provider, such as local, oci or kubernetes",
      )
      .default("local"),
    /** The container engine's API socket of WARREN_PROVIDER=oci (Podman's service, or Docker's). */
    WARREN_OCI_SOCKET: z
      .string()
      .default("/run/warren-oci/podman.sock")
      .refine((v) => v.startsWith("/"), { message: "WARREN_OCI_SOCKET must be an absolute socket path" }),
    WARREN_OCI_IMAGE: z
      .string()
      .default("warren-box:latest")
      .refine((v) => /^[a-z0-9][a-z0-9._/:-]*$/.test(v), {
        message: "WARREN_OCI_IMAGE must be an image name such as warren-box:latest (scripts/oci.sh image)",
      }),
    /**
     * The OCI runtime boxes run with on WARREN_PROVIDER=oci: runc or crun; unset or empty, the
     * first the host can run (the engine's default, then runc, then crun), found by running a
     * container with each (src/boxes/oci/runtime.ts). scripts/oci.sh service reads it too.
     */
    WARREN_OCI_RUNTIME: z
      .enum([...OCI_RUNTIMES, ""], {
        message: `WARREN_OCI_RUNTIME must be one of ${OCI_RUNTIMES.join(", ")}, or empty for the first the host can run`,
      })
      .optional()
      .transform((v) => (v === "" ? undefined : v)),
    /** WARREN_PROVIDER=kubernetes: a kubeconfig file; unset, the server's own in-cluster account. */
    WARREN_K8S_KUBECONFIG: text().refine((v) => v === undefined || v.startsWith("/"), {
      message: "WARREN_K8S_KUBECONFIG must be an absolute path to a kubeconfig file",
    }),
    WARREN_K8S_NAMESPACE: z
      .string()
      .default("warren-boxes")
      .refine((v) => /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(v), {
        message: "WARREN_K8S_NAMESPACE must be a namespace name (lower-case letters, digits and -)",
      }),
    WARREN_K8S_IMAGE: z
      .string()
      .default("warren-box:latest")
      .refine((v) => /^[a-z0-9][a-z0-9._/:@-]*$/.test(v), {
        message: "WARREN_K8S_IMAGE must be an image reference such as warren-box:latest",
      }),
    WARREN_K8S_STORAGE_CLASS: z
      .string()
      .default("standard")
      .refine((v) => /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(v), {
        message: "WARREN_K8S_STORAGE_CLASS must be a storage class name",
      }),
    /** The claim holding /data, the contracts and the harness CLIs for every box, by sub-path. */
    WARREN_K8S_SHARED_CLAIM: z
      .string()
      .default("warren-shared")
      .refine((v) => /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(v), {
        message: "WARREN_K8S_SHARED_CLAIM must be a claim name",
      }),
    /** The ReadWriteMany claim of the machines' folders: the server mounts it at STATE_ROOT/workspaces. */
    WARREN_K8S_WORKSPACES_CLAIM: z
      .string()
      .default("warren-workspaces")
      .refine((v) => /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(v), {
        message: "WARREN_K8S_WORKSPACES_CLAIM must be a claim name",
      }),
    /** The id that box root's folders carry on the workspaces volume (0: the Pods' volumes are idmapped). */
    WARREN_K8S_BOX_ROOT_ID: z.coerce
      .number({ message: "WARREN_K8S_BOX_ROOT_ID must be a user id" })
      .int("WARREN_K8S_BOX_ROOT_ID must be a user id")
      .min(0, "WARREN_K8S_BOX_ROOT_ID must be a user id")
      .max(0x7ffffffe, "WARREN_K8S_BOX_ROOT_ID must be a user id")
      .default(0),
    WARREN_MASTER_KEY: text().refine((v) => v === undefined || /^[0-9a-fA-F]{64}$/.test(v), {
      message:
        "WARREN_MASTER_KEY must be 64 hex characters (32 bytes); generate one with `openssl rand -hex 32`",
    }),
    ALLOW_ZERO_MASTER_KEY: bool,
    /**
     * The identity mode's name: compat-cookie, trusted-header or one an extension registers
     * (src/http/identity.ts); the start refuses a name no mode has.
     */
    AUTH_MODE: z
      .string()
      .regex(
        /^[a-z][a-z0-9-]{0,62}$/,
        "AUTH_MODE must name an identity mode, such as compat-cookie or trusted-header",
      )
      .default("compat-cookie"),
    /**
     * Extensions loaded at boot, before the identity mode and the provider are chosen: a
     * comma-separated list of module files (absolute, or relative to the folder the server
     * starts in) or package names, each exporting `register(host)` (docs/extensions.md).
     */
    WARREN_EXTENSIONS: commaList().transform((l) =>
      l.map((x) => (x.startsWith(".") || x.startsWith("/") ? path.resolve(x) : x)),
    ),
    TRUSTED_HEADER: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, "TRUSTED_HEADER must be an HTTP header name")
      .default("x-forwarded-email")
      .transform((v) => v.toLowerCase()),
    PUBLIC_BASE_URL: text().refine((v) => v === undefined || URL.canParse(v), {
      message: "PUBLIC_BASE_URL must be an absolute URL such as https://warren.example.com",
    }),
    /** AUTH_MODE=oidc: the OpenID provider people sign in with, and this server's client there. */
    WARREN_OIDC_ISSUER: text().refine((v) => v === undefined || (/^https?:/.test(v) && URL.canParse(v)), {
      message: "WARREN_OIDC_ISSUER must be an http or https URL such as https://login.example.com",
    }),
    WARREN_OIDC_CLIENT_ID: text(),
    WARREN_OIDC_CLIENT_SECRET: text(),
    WARREN_PREVIEW_PORT: z.coerce
      .number({ message: "WARREN_PREVIEW_PORT must be a port number" })
      .int()
      .min(0, "WARREN_PREVIEW_PORT must be between 0 and 65535")
      .max(65535, "WARREN_PREVIEW_PORT must be between 0 and 65535")
      .optional(),
    WARREN_PREVIEW_DOMAIN: z
      .string()
      .optional()
      .transform((v) => (v === "" ? undefined : v?.toLowerCase()))
      .refine(
        (v) => v === undefined || /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/.test(v),
        {
          message:
            "WARREN_PREVIEW_DOMAIN must be a domain such as preview.example.com (previews are <port>-<agent id>.<domain>)",
        },
      ),
    WARREN_TRUSTED_PROXIES: ipList("WARREN_TRUSTED_PROXIES", "127.0.0.1/32,::1/128", false),
    WARREN_EGRESS_PRIVATE_ALLOW: ipList("WARREN_EGRESS_PRIVATE_ALLOW", "", true),
    WORKSPACE_MAX_MIB: mib("WORKSPACE_MAX_MIB", 10240),
    BOX_IDLE_S: z.coerce
      .number({ message: "BOX_IDLE_S must be a number of seconds" })
      .int()
      .positive("BOX_IDLE_S must be above 0")
      .default(300),
    BOX_WARM_POOL: z.coerce
      .number({ message: "BOX_WARM_POOL must be a whole number of boxes" })
      .int("BOX_WARM_POOL must be a whole number of boxes")
      .min(0, "BOX_WARM_POOL must be 0 (no warm boxes) or more")
      .max(64, "BOX_WARM_POOL must be at most 64")
      .default(0),
    BOX_PAUSE_S: z.coerce
      .number({ message: "BOX_PAUSE_S must be a number of seconds" })
      .int("BOX_PAUSE_S must be a whole number of seconds")
      .min(0, "BOX_PAUSE_S must be 0 (never pause) or more")
      .default(60),
    WARREN_SHUTDOWN_GRACE_S: z.coerce
      .number({ message: "WARREN_SHUTDOWN_GRACE_S must be a number of seconds" })
      .int("WARREN_SHUTDOWN_GRACE_S must be a whole number of seconds")
      .min(0, "WARREN_SHUTDOWN_GRACE_S must be 0 or more")
      .default(30),
    BOX_PIDS: z.coerce
      .number({ message: "BOX_PIDS must be a whole number" })
      .int("BOX_PIDS must be a whole number")
      .min(16, "BOX_PIDS must be at least 16")
      .max(1 << 22, "BOX_PIDS must be at most 4194304")
      .default(4096),
    EGRESS_MAX_CONNECTIONS: z.coerce
      .number({ message: "EGRESS_MAX_CONNECTIONS must be a whole number" })
      .int("EGRESS_MAX_CONNECTIONS must be a whole number")
      .min(1, "EGRESS_MAX_CONNECTIONS must be at least 1")
      .max(10_000, "EGRESS_MAX_CONNECTIONS must be at most 10000")
      .default(64),
    /** How long a connection a policy's `network.ask` holds waits for a person's decision. */
    EGRESS_ASK_TIMEOUT_S: z.coerce
      .number({ message: "EGRESS_ASK_TIMEOUT_S must be a number of seconds" })
      .int("EGRESS_ASK_TIMEOUT_S must be a whole number of seconds")
      .min(1, "EGRESS_ASK_TIMEOUT_S must be at least 1")
      .max(86_400, "EGRESS_ASK_TIMEOUT_S must be at most 86400")
      .default(300),
    BOX_ORPHAN_S: z.coerce
      .number({ message: "BOX_ORPHAN_S must be a number of seconds" })
      .int("BOX_ORPHAN_S must be a whole number of seconds")
      .min(0, "BOX_ORPHAN_S must be 0 (never) or more")
      .default(300),
    BOX_HEALTH_MS: z.coerce
      .number({ message: "BOX_HEALTH_MS must be a number of milliseconds" })
      .int("BOX_HEALTH_MS must be a whole number of milliseconds")
      .min(100, "BOX_HEALTH_MS must be at least 100")
      .default(1000),
    WARREN_ORG_MAX_RUNS: z.coerce
      .number({ message: "WARREN_ORG_MAX_RUNS must be a whole number of runs" })
      .int("WARREN_ORG_MAX_RUNS must be a whole number of runs")
      .min(1, "WARREN_ORG_MAX_RUNS must be at least 1")
      .default(16),
    /** Runs one agent may have waiting at once; past it run.queue_full, and a schedule's fire is skipped. */
    WARREN_QUEUE_PER_AGENT: z.coerce
      .number({ message: "WARREN_QUEUE_PER_AGENT must be a whole number of runs" })
      .int("WARREN_QUEUE_PER_AGENT must be a whole number of runs")
      .min(1, "WARREN_QUEUE_PER_AGENT must be at least 1")
      .default(100),
    /** Runs one organisation may have waiting at once, across its agents. */
    WARREN_QUEUE_PER_ORG: z.coerce
      .number({ message: "WARREN_QUEUE_PER_ORG must be a whole number of runs" })
      .int("WARREN_QUEUE_PER_ORG must be a whole number of runs")
      .min(1, "WARREN_QUEUE_PER_ORG must be at least 1")
      .default(1000),
    /** Open event streams and WebSockets one identity may hold at once (docs/operations.md). */
    WARREN_STREAMS_PER_IDENTITY: z.coerce
      .number({ message: "WARREN_STREAMS_PER_IDENTITY must be a whole number of streams" })
      .int("WARREN_STREAMS_PER_IDENTITY must be a whole number of streams")
      .min(1, "WARREN_STREAMS_PER_IDENTITY must be at least 1")
      .default(32),
    /** Open event streams and WebSockets the whole server holds at once. */
    WARREN_STREAMS_MAX: z.coerce
      .number({ message: "WARREN_STREAMS_MAX must be a whole number of streams" })
      .int("WARREN_STREAMS_MAX must be a whole number of streams")
      .min(1, "WARREN_STREAMS_MAX must be at least 1")
      .default(4096),
    /** Seconds an event stream may go with no event before the server closes it. */
    WARREN_STREAM_IDLE_S: z.coerce
      .number({ message: "WARREN_STREAM_IDLE_S must be a number of seconds" })
      .int("WARREN_STREAM_IDLE_S must be a whole number of seconds")
      .min(1, "WARREN_STREAM_IDLE_S must be at least 1")
      .default(600),
    /** The most bytes of model history a conversation's turn sends (docs/api.md, "Conversations"). */
    WARREN_CONVERSATION_HISTORY_BYTES: z.coerce
      .number({ message: "WARREN_CONVERSATION_HISTORY_BYTES must be a whole number of bytes" })
      .int("WARREN_CONVERSATION_HISTORY_BYTES must be a whole number of bytes")
      .min(1024, "WARREN_CONVERSATION_HISTORY_BYTES must be at least 1024")
      .default(512 * 1024),
    WARREN_HARNESS_KINDS: namesFrom("WARREN_HARNESS_KINDS", HARNESS_KINDS),
    WARREN_HARNESS_DIR: text(),
    WARREN_POLICY: text().describe("the policy file (workspace classes); default STATE_ROOT/policy.yaml"),
    WARREN_CONTRACTS: text()
      .refine((v) => v === undefined || path.isAbsolute(v), "WARREN_CONTRACTS must be an absolute path")
      .describe(
        "the flow contracts folder (one folder per flow, its flow.yaml); default STATE_ROOT/contracts",
      ),
    WARREN_ALLOW_DEGRADED: namesFrom("WARREN_ALLOW_DEGRADED", BOOT_CHECK_NAMES),
    WARREN_MODEL_PRICES: modelPrices,
    /** Seconds an agent's secret_request waits for a person before it expires. */
    WARREN_SECRET_REQUEST_WAIT_S: z.coerce
      .number({ message: "WARREN_SECRET_REQUEST_WAIT_S must be a number of seconds" })
      .int("WARREN_SECRET_REQUEST_WAIT_S must be a whole number of seconds")
      .min(1, "WARREN_SECRET_REQUEST_WAIT_S must be at least 1")
      .default(1800),
    /** The server's own outbound proxy (http://host:port): tools' and connections' HTTP goes through it. */
    WARREN_OUTBOUND_PROXY: text()
      .refine((v) => v === undefined || typeof parseOutboundProxy(v) !== "string", {
        message: "WARREN_OUTBOUND_PROXY must be http://[user:password@]host:port",
      })
      .describe("the server's own outbound proxy for tools' and connections' HTTP"),
    // OpenTelemetry (src/observability/telemetry.ts): the standard variables, off with no endpoint
    OTEL_SDK_DISABLED: bool,
    OTEL_SERVICE_NAME: z.string().min(1).default("warren"),
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: otlpUrl,
    OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
    OTEL_EXPORTER_OTLP_PROTOCOL: z
      .enum(["http/json", ""], {
        message:
          "OTEL_EXPORTER_OTLP_PROTOCOL: warren exports OTLP over HTTP as JSON (http/json), which an OTLP/HTTP receiver (port 4318) takes; unset it or set http/json",
      })
      .optional(),
    OTEL_TRACES_EXPORTER: z.enum(["otlp", "none"]).default("otlp"),
    OTEL_METRICS_EXPORTER: z.enum(["otlp", "none"]).default("otlp"),
    OTEL_METRIC_EXPORT_INTERVAL: z.coerce.number().int().min(100).default(60_000),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  })
  .superRefine((c, ctx) => {
    if (c.AUTH_MODE === "oidc" && (!c.WARREN_OIDC_ISSUER || !c.WARREN_OIDC_CLIENT_ID)) {
      ctx.addIssue({
        code: "custom",
        path: [c.WARREN_OIDC_ISSUER ? "WARREN_OIDC_CLIENT_ID" : "WARREN_OIDC_ISSUER"],
        message:
          "AUTH_MODE=oidc needs WARREN_OIDC_ISSUER and WARREN_OIDC_CLIENT_ID (and WARREN_OIDC_CLIENT_SECRET)",
      });
    }
    if (
      c.WARREN_MASTER_KEY !== undefined &&
      /^0{64}$/.test(c.WARREN_MASTER_KEY) &&
      !c.ALLOW_ZERO_MASTER_KEY
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["WARREN_MASTER_KEY"],
        message:
          "the all-zero master key is refused; set a random key or ALLOW_ZERO_MASTER_KEY=1 for development",
      });
    }
  })
  .transform((c) => ({
    ...c,
    // the previews' listener: WARREN_PORT + 1 by default (an ephemeral port when WARREN_PORT is 0)
    WARREN_PREVIEW_PORT:
      c.WARREN_PREVIEW_PORT ?? (c.WARREN_PORT === 0 ? 0 : Math.min(65535, c.WARREN_PORT + 1)),
    STATE_ROOT: path.resolve(c.STATE_ROOT),
    WARREN_HARNESS_DIR: path.resolve(c.WARREN_HARNESS_DIR ?? path.join(c.STATE_ROOT, "harness")),
  }));

export type Config = z.output<typeof configSchema> & {
  /** The variables the schema does not know, for the extensions' own (docs/extensions.md). */
  readonly extraEnv?: Readonly<Record<string, string | undefined>>;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Parses an environment (process.env in main, a literal object in tests). */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const r = configSchema.safeParse(env);
  if (r.success) {
    const known = new Set(Object.keys(configSchema.in.shape));
    return { ...r.data, extraEnv: Object.fromEntries(Object.entries(env).filter(([k]) => !known.has(k))) };
  }
  throw new ConfigError(r.error.issues.map((i) => `${i.path.join(".") || "environment"}: ${i.message}`));
}
