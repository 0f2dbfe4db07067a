// A machine's environment: its base plus a layer of Debian (and global npm) packages built
// outside every box, in revisions; proposals that ask for packages, decided by an owner or
// an admin (docs/api.md, "Environments and capabilities").
import { z } from "zod";

const debName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9+.-]{0,99}$/, "must be a Debian package name (lowercase letters, digits, + . -)");
const npmName = z
  .string()
  .regex(/^(@[a-z0-9][a-z0-9._-]{0,99}\/)?[a-z0-9][a-z0-9._-]{0,99}$/, "must be an npm package name");
const version = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9.+~:_-]{0,99}$/, "must be a package version");

export const EnvPackage = z
  .object({ name: z.string(), version: z.string().describe("the exact version built") })
  .meta({ id: "EnvPackage" });

/** A package asked for: its name, optionally `name=version` for an exact version. */
const debSpec = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9+.-]{0,99}(=[A-Za-z0-9][A-Za-z0-9.+~:_-]{0,99})?$/,
    "must be a Debian package name, or name=version",
  );
const npmSpec = z.object({ name: npmName, version: version.optional() }).strict();

export const EnvRevisionStatus = z.enum(["building", "ready", "failed"]).meta({ id: "EnvRevisionStatus" });

export const EnvRevision = z
  .object({
    machine_id: z.string(),
    revision: z.number().int(),
    status: EnvRevisionStatus.describe(
      "`failed`: the build did not finish and the machine stayed on its last good revision",
    ),
    packages: z.array(EnvPackage).describe("Debian packages over the base"),
    npm: z.array(EnvPackage).describe("npm packages installed globally in the layer"),
    proposal_id: z.string().nullable(),
    created_by: z.string(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    log: z.string().optional().describe("the build's log (GET of one revision)"),
  })
  .meta({ id: "EnvRevision" });
export const EnvRevisionList = z.object({ items: z.array(EnvRevision) }).meta({ id: "EnvRevisionList" });

export const MachineEnvironment = z
  .object({
    machine_id: z.string(),
    base: z.string().describe("the host's system folders (`host`), or the image the box starts from"),
    revision: z.number().int().describe("the last good revision (0: the base alone)"),
    packages: z.array(EnvPackage),
    npm: z.array(EnvPackage),
    box_revision: z
      .number()
      .int()
      .nullable()
      .describe("the revision the machine's box runs (null: no box started since)"),
    building: z.number().int().nullable().describe("a revision being built now"),
    pending_proposals: z.number().int(),
  })
  .meta({ id: "MachineEnvironment" });

export const EnvironmentSetRequest = z
  .object({
    packages: z.array(debSpec).max(200),
    npm: z.array(npmSpec).max(50).optional(),
  })
  .strict()
  .meta({ id: "EnvironmentSetRequest" });

export const EnvProposalState = z.enum(["pending", "approved", "refused"]).meta({ id: "EnvProposalState" });

export const EnvProposal = z
  .object({
    id: z.string(),
    machine_id: z.string(),
    org_id: z.string(),
    agent_id: z.string().nullable().describe("the agent whose env_propose made it (null: a member)"),
    proposed_by: z.string(),
    packages: z.array(EnvPackage).describe("exact packages and versions, resolved when it was made"),
    npm: z.array(EnvPackage),
    why: z.string(),
    state: EnvProposalState,
    decided_by: z.string().nullable(),
    decided_at: z.string().nullable(),
    revision: z.number().int().nullable().describe("the revision its approval builds"),
    created_at: z.string(),
  })
  .meta({ id: "EnvProposal" });
export const EnvProposalList = z.object({ items: z.array(EnvProposal) }).meta({ id: "EnvProposalList" });

/** One proposal's bounds, held by the API's schema and by the service for an agent's env_propose. */
export const ENV_PROPOSAL_MAX = { packages: 50, npm: 20, why: 2000 } as const;

export const EnvProposalCreateRequest = z
  .object({
    packages: z.array(debName).max(ENV_PROPOSAL_MAX.packages),
    npm: z.array(npmSpec).max(ENV_PROPOSAL_MAX.npm).optional(),
    why: z.string().trim().min(1).max(ENV_PROPOSAL_MAX.why),
  })
  .strict()
  .meta({ id: "EnvProposalCreateRequest" });

export const EnvProposalDecision = z
  .object({ decision: z.enum(["approve", "refuse"]) })
  .strict()
  .meta({ id: "EnvProposalDecision" });

export const envProposalParams = z.object({
  id: z.string().regex(/^mch_[0-9a-z]{16}$/, "must be a mch_ id"),
  proposal: z.string().regex(/^env_[0-9a-z]{16}$/, "must be an env_ id"),
});
export const envRevisionParams = z.object({
  id: z.string().regex(/^mch_[0-9a-z]{16}$/, "must be a mch_ id"),
  revision: z.coerce.number().int().min(1),
});
export const envProposalQuery = z.object({ state: EnvProposalState.optional() });
