export { Records, redactDeep, type Redacts, type RunRecording } from "./writer.js";
export type { ConversationRecords } from "./conversations.js";
