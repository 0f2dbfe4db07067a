import js from "@eslint/js";
import tseslint from "typescript-eslint";
import importX, { createNodeResolver } from "eslint-plugin-import-x";

// Which folder of src/ may import which: the layers of DESIGN.md, checked. Paths are
// relative to the repository; `except` is relative to `from`. Shared by every layer:
// errors.ts, ids.ts, config/ (the environment's schema), observability/.
// The services, in floors from the bottom up: a service imports the floors below its own (and
// its own floor), never one above. Beneath them all: the store, boxd, the provider seam, the
// runtime and the boot checks. Every folder of src/ that is a service is named here, each
// floor with why it sits where it does (the lint message says it).
const tiers = [
  {
    names: ["events", "access", "net", "policy"],
    why: "the event bus, who may do what, which addresses are reachable and the Cedar policies are asked by everything",
  },
  { names: ["machines"], why: "machines hold boxes, and know only access" },
  {
    names: ["secrets", "budgets"],
    why: "secrets and the budgets' ledger are read by agents, the door and the model gateway",
  },
  {
    names: ["agents", "orgs", "workspaces", "areas"],
    why: "agents, organisations, workspace classes and areas are what work is done by and in",
  },
  {
    names: ["guilds", "homes", "bridges", "records", "artifacts"],
    why: "homes, the record writer and the artifact store hold what an agent's work leaves",
  },
  {
    names: ["exec", "workloads", "egress", "preview", "models", "approvals", "versions"],
    why: "the door, the way out, the model gateway, approvals and versions serve a unit of work",
  },
  {
    names: ["terminal", "browser", "tools"],
    why: "terminals, the agents' browsers and tools use the door, the gateway and approvals",
  },
  { names: ["runs"], why: "the run recorder drives tools, models and the door" },
  { names: ["conversations", "evals", "flows"], why: "conversations, evaluations and flows start runs" },
  { names: ["schedules", "dispatch"], why: "schedules and guild dispatch start runs and conversation turns" },
  {
    names: ["relocation"],
    why: "definitions and moves rebuild or carry a machine's agents with all they hold",
  },
];
const services = ["boot", ...tiers.flatMap((t) => t.names)];
const list = (names) => names.map((n) => `${n}/`).join(", ");
const tierZones = tiers.slice(0, -1).map((tier, i) => {
  const below = tiers.slice(0, i).flatMap((t) => t.names);
  const above = tiers.slice(i + 1).flatMap((t) => t.names);
  return {
    target: tier.names.map((s) => `./src/${s}`),
    from: above.map((s) => `./src/${s}`),
    message: `${list(tier.names)} sit on floor ${i + 1} (${tier.why}): they may import ${i === 0 ? "no other service" : list(below)} (beside each other, the store, the runtime's surface, the provider seam, contract/, config/, errors, ids, observability/); ${list(above)} sit above and are told through the event bus or handed in, not imported.`,
  };
});
const layers = [
  {
    target: "./src/store",
    from: "./src",
    except: ["./store", "./contract/lists.ts"],
    message:
      "the store (schema, migrations, connection) imports nothing of warren but the contract's lists (contract/lists.ts).",
  },
  {
    target: "./src/boxd",
    from: "./src",
    except: ["./boxd", "./errors.ts"],
    message: "boxd's protocol and client sit below everything: they import only each other.",
  },
  {
    target: "./src/boxes",
    from: "./src",
    except: ["./boxes", "./boxd", "./errors.ts", "./ids.ts", "./config", "./contract/lists.ts"],
    message:
      "the provider seam knows nothing of machines, the runtime, services or HTTP (of the contract, only its lists).",
  },
  {
    target: ["./src/!(boxes)/**", "./src/*.ts"],
    from: "./src/boxes/local",
    message: "the local provider is reached through src/boxes (its index: the interface and createProvider).",
  },
  ...["local", "oci", "kubernetes"].map((provider, _, all) => ({
    target: `./src/boxes/${provider}`,
    from: all.filter((other) => other !== provider).map((other) => `./src/boxes/${other}`),
    message:
      "a provider never imports another provider: what they share (paths, records, users files, cgroups, locks) lives in src/boxes/kit, so each can change alone.",
  })),
  {
    target: "./src/runtime",
    from: "./src",
    except: [
      "./runtime",
      "./boxes",
      "./boxd",
      "./store",
      "./events",
      "./errors.ts",
      "./ids.ts",
      "./config",
      "./observability",
    ],
    message:
      "the runtime uses the provider seam, boxd and the store; services use the runtime, not the other way.",
  },
  {
    target: services.map((s) => `./src/${s}`),
    from: [
      "./src/http",
      "./src/cli",
      "./src/sdk",
      "./src/boxd",
      "./src/compose",
      "./src/server.ts",
      "./src/main.ts",
    ],
    message:
      "services know nothing of HTTP, the CLI, the SDK or the composition root (src/compose, server.ts), and reach boxes through src/runtime.",
  },
  {
    target: services.map((s) => `./src/${s}`),
    from: "./src/runtime",
    except: ["./index.ts"],
    message: "services use the runtime's public surface, src/runtime/index.ts.",
  },
  {
    target: "./src/http",
    from: [
      "./src/store",
      "./src/boxes",
      "./src/boxd",
      "./src/cli",
      "./src/sdk",
      "./src/compose",
      "./src/server.ts",
      "./src/main.ts",
    ],
    message: "routes call services; services use the store and the boxes.",
  },
  {
    target: "./src/http",
    from: "./src/runtime",
    except: ["./index.ts"],
    message: "routes use the runtime's public surface, src/runtime/index.ts.",
  },
  {
    target: "./src/sdk",
    from: "./src",
    except: ["./sdk", "./contract"],
    message: "the SDK is published on its own: it imports only src/sdk and types of src/contract.",
  },
  {
    target: "./src/cli",
    from: "./src",
    except: ["./cli", "./sdk", "./mcp", "./main.ts", "./server.ts", "./config"],
    message: "the CLI speaks to warren through the SDK; only `serve` starts the server (src/main.ts).",
  },
  {
    target: "./src/mcp",
    from: "./src",
    except: ["./mcp", "./sdk"],
    message: "warren's MCP tools call the API through the SDK, as the caller: no other way in.",
  },
  {
    target: "./src/boot",
    from: "./src",
    except: ["./boot", "./boxes", "./config", "./errors.ts", "./observability"],
    message:
      "the boot checks read the host and the state tree: they import only the provider seam and config/.",
  },
  ...tierZones,
];

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "tmp/**",
      "bench/results/**",
      "node_modules/**",
      "drizzle/**",
      ".state/**",
      "native/**",
      "**/*.js",
      "**/*.mjs",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "import-x": importX },
    settings: {
      // `./x.js` in an import names `./x.ts`: without this, import rules see nothing.
      "import-x/resolver-next": [
        createNodeResolver({
          extensions: [".ts", ".js", ".json", ".node"],
          extensionAlias: { ".js": [".ts", ".js"] },
        }),
      ],
    },
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            {
              from: "package",
              package: "node:test",
              name: ["test", "describe", "it", "suite", "before", "after", "beforeEach", "afterEach"],
            },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": [
        "error",
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      "@typescript-eslint/switch-exhaustiveness-check": [
        "error",
        { considerDefaultExhaustiveForUnions: true },
      ],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/only-throw-error": "error",
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/restrict-template-expressions": "off",
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
    },
  },
  {
    // The layers bind what ships; tests beside the code may start a whole server.
    files: ["src/**/*.ts"],
    ignores: ["src/**/*.test.ts"],
    rules: { "import-x/no-restricted-paths": ["error", { zones: layers }] },
  },
  {
    // src/contract (the API's shapes, when it exists) reaches the SDK as types only.
    files: ["src/sdk/**/*.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["../contract", "../contract/*"],
              allowTypeImports: true,
              message:
                "the SDK takes only types from src/contract (the lists it shares with the contract live in src/sdk/lists.ts).",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["test/**/*.ts", "**/*.test.ts", "bench/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
