// GitHub Apps (owners and admins register one) and the installation an agent is bound to; the
// installation tokens themselves are never answered (they go to the agent's runtime folder).
import type { GithubApps } from "../../connections/github.js";
import { idParams, orgIdQuery } from "../../contract/common.js";
import {
  GithubApp,
  GithubAppCreateRequest,
  GithubAppList,
  GithubInstallation,
  GithubInstallationRequest,
} from "../../contract/github.js";
import { route, type AnyRoute } from "../route.js";

export function githubRoutes(github: GithubApps): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/github/apps",
      id: "github.apps.create",
      tag: "connections",
      summary:
        "Register a GitHub App (owner, admin): its id, its private key (sealed, never answered, never leaves the server), its API base (GitHub Enterprise) and git host",
      body: GithubAppCreateRequest,
      status: 201,
      response: GithubApp,
      errors: ["access.denied"],
      handler: ({ who, body }) => github.createApp(who, body),
    }),
    route({
      method: "GET",
      url: "/api/github/apps",
      id: "github.apps.list",
      tag: "connections",
      summary: "The GitHub Apps of the caller's organisations (or of one)",
      query: orgIdQuery,
      response: GithubAppList,
      handler: async ({ who, query }) => ({ items: await github.listApps(who, query.org_id) }),
    }),
    route({
      method: "DELETE",
      url: "/api/github/apps/:id",
      id: "github.apps.delete",
      tag: "connections",
      summary: "Remove a GitHub App (owner, admin); its agents' tokens leave their runtime folders",
      params: idParams("gha"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => github.deleteApp(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/agents/:id/github",
      id: "agents.github.put",
      tag: "connections",
      summary:
        "Bind the agent to an installation of a GitHub App (owner, admin): while its box runs, an installation token is in /run/warren/<agent id>/ (refreshed before it expires) and git's credential helper reads it",
      params: idParams("agt"),
      body: GithubInstallationRequest,
      response: GithubInstallation,
      errors: ["access.denied", "connection.unusable"],
      handler: ({ who, params, body }) => github.bind(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/github",
      id: "agents.github.get",
      tag: "connections",
      summary: "The agent's GitHub installation and when the token in its runtime folder expires",
      params: idParams("agt"),
      response: GithubInstallation,
      errors: ["access.denied"],
      handler: ({ who, params }) => github.getInstallation(who, params.id),
    }),
    route({
      method: "DELETE",
      url: "/api/agents/:id/github",
      id: "agents.github.delete",
      tag: "connections",
      summary: "Unbind the agent from its GitHub installation: its token leaves its runtime folder",
      params: idParams("agt"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => github.unbind(who, params.id),
    }),
  ];
}
