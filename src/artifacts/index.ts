export { Artifacts } from "./service.js";
export type { AgentArtifacts } from "./agent.js";
