export { Records, type Redacts, type RunRecording } from "./writer.js";
