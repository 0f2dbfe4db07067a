// GitHub Apps (owners and admins register one; its private key is sealed, never answered) and
// the installation an agent is bound to: what the routes under /api/github take and answer.
// Installation tokens are never answered: the server writes them to the agent's runtime folder.
import { z } from "zod";
import { idOf, items, name } from "./common.js";

const httpUrl = z
  .string()
  .max(2000)
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password;
    } catch {
      return false;
    }
  }, "must be an http or https URL without credentials");

export const GithubAppCreateRequest = z
  .object({
    org_id: idOf("org"),
    name,
    app_id: z.string().regex(/^[0-9]{1,20}$/, "must be the App's numeric id"),
    private_key: z
      .string()
      .min(1)
      .max(20_000)
      .describe("the App's private key (PEM); sealed at rest, never answered, never leaves the server"),
    api_url: httpUrl
      .optional()
      .describe("default https://api.github.com; a GitHub Enterprise server's API base"),
    git_url: httpUrl
      .optional()
      .describe(
        "where git reaches the repositories (the credential helper answers for this host only); default https://github.com for api.github.com, else the API's origin",
      ),
  })
  .strict()
  .meta({ id: "GithubAppCreateRequest" });

export const GithubApp = z
  .object({
    id: idOf("gha"),
    org_id: idOf("org"),
    name: z.string(),
    app_id: z.string(),
    api_url: z.string(),
    git_url: z.string(),
    created_at: z.string(),
  })
  .meta({ id: "GithubApp" });
export const GithubAppList = items(GithubApp, "GithubAppList");

export const GithubInstallationRequest = z
  .object({
    github_app_id: idOf("gha"),
    installation_id: z.string().regex(/^[0-9]{1,20}$/, "must be the installation's numeric id"),
  })
  .strict()
  .meta({ id: "GithubInstallationRequest" });

export const GithubInstallation = z
  .object({
    agent_id: idOf("agt"),
    github_app_id: idOf("gha"),
    installation_id: z.string(),
    token_expires_at: z
      .string()
      .nullable()
      .describe(
        "when the token in the agent's runtime folder expires (refreshed before); null when none is there",
      ),
  })
  .meta({ id: "GithubInstallation" });
