// What the suites of the harness kinds share (codex, claude-code and opencode with their real
// CLIs, installed by scripts/harness.sh): where the CLIs are, when a suite skips for want of
// one, and a server that runs those kinds whose bound admits exactly the fake providers.
import path from "node:path";
import { installedVersion, type HarnessKind } from "../../src/runs/harness.js";
import { privateAllow } from "./bound.js";
import { startTestServer, type TestServer } from "./server.js";

export const HARNESS_DIR = process.env.WARREN_TEST_HARNESS_DIR ?? path.resolve(".state/harness");

/**
 * Why a suite of `kind` skips: its CLI is not installed. Only outside scripts/test.sh (which
 * installs the CLIs and says where, WARREN_TEST_HARNESS_DIR): there a missing CLI fails the test.
 */
export const harnessSkip = (kind: HarnessKind): string | false =>
  installedVersion(HARNESS_DIR, kind) || process.env.WARREN_TEST_HARNESS_DIR
    ? false
    : `the ${kind} CLI is not installed in ${HARNESS_DIR}: run scripts/harness.sh ${HARNESS_DIR} ${kind} (make test does)`;

/** A server that runs the harness `kinds` from HARNESS_DIR, its bound admitting the fakes' ports. */
export function startHarnessServer(
  kinds: HarnessKind[],
  fakes: { baseUrl: string }[],
  env: Record<string, string> = {},
): Promise<TestServer> {
  return startTestServer({
    env: {
      ...env,
      WARREN_HARNESS_KINDS: kinds.join(","),
      WARREN_HARNESS_DIR: HARNESS_DIR,
      WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(...fakes),
    },
  });
}
