export { Records, redactDeep, type Redacts, type RunRecording } from "./writer.js";
export { messageData } from "./conversations.js";
