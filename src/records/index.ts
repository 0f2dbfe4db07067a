export { Records, type RunRecording } from "./writer.js";
