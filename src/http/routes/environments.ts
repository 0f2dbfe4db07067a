import { idParams } from "../../contract/common.js";
import {
  EnvironmentSetRequest,
  EnvProposal,
  EnvProposalCreateRequest,
  EnvProposalDecision,
  EnvProposalList,
  envProposalParams,
  envProposalQuery,
  EnvRevision,
  EnvRevisionList,
  envRevisionParams,
  MachineEnvironment,
} from "../../contract/environments.js";
import type { Environments } from "../../machines/environment.js";
import { route, type AnyRoute } from "../route.js";

export function environmentRoutes(envs: Environments): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/machines/:id/environment",
      id: "environments.get",
      tag: "machines",
      summary: "The machine's environment: its base, its last good revision's packages, a build going on",
      params: idParams("mch"),
      response: MachineEnvironment,
      handler: ({ who, params }) => envs.get(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/machines/:id/environment",
      id: "environments.set",
      tag: "machines",
      summary:
        "Set the machine's packages (owner or admin): a new revision is built outside the box; the machine stays on its last good one until it is ready",
      params: idParams("mch"),
      body: EnvironmentSetRequest,
      status: 202,
      response: EnvRevision,
      errors: ["access.denied", "env.package_unknown"],
      handler: ({ who, params, body }) => envs.set(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/machines/:id/environment/revisions",
      id: "environments.revisions",
      tag: "machines",
      summary: "The environment's revisions, newest first",
      params: idParams("mch"),
      response: EnvRevisionList,
      handler: async ({ who, params }) => ({ items: await envs.revisions(who, params.id) }),
    }),
    route({
      method: "GET",
      url: "/api/machines/:id/environment/revisions/:revision",
      id: "environments.revision",
      tag: "machines",
      summary: "One revision with its build's log",
      params: envRevisionParams,
      response: EnvRevision,
      handler: ({ who, params }) => envs.revision(who, params.id, params.revision),
    }),
    route({
      method: "POST",
      url: "/api/machines/:id/environment/proposals",
      id: "environments.propose",
      tag: "machines",
      summary:
        "Propose packages for the machine (a member): resolved to exact versions now, built only when an owner or admin approves",
      params: idParams("mch"),
      body: EnvProposalCreateRequest,
      status: 201,
      response: EnvProposal,
      errors: ["access.denied", "env.package_unknown"],
      handler: ({ who, params, body }) => envs.propose({ who }, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/machines/:id/environment/proposals",
      id: "environments.proposals",
      tag: "machines",
      summary: "The machine's proposals, newest first (or those in one state)",
      params: idParams("mch"),
      query: envProposalQuery,
      response: EnvProposalList,
      handler: async ({ who, params, query }) => ({
        items: await envs.proposals(who, params.id, query.state),
      }),
    }),
    route({
      method: "POST",
      url: "/api/machines/:id/environment/proposals/:proposal/decide",
      id: "environments.decide",
      tag: "machines",
      summary: "Approve (a new revision is built over the current one) or refuse a proposal (owner or admin)",
      params: envProposalParams,
      body: EnvProposalDecision,
      response: EnvProposal,
      errors: ["access.denied", "env.proposal_decided"],
      handler: ({ who, params, body }) => envs.decide(who, params.id, params.proposal, body.decision),
    }),
  ];
}
