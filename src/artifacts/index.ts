export { Artifacts, type Grant, type RevisionItem } from "./service.js";
export type { AgentArtifacts } from "./agent.js";
export type { ArtifactItem } from "./rows.js";
