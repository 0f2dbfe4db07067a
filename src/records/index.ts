export { Records, runSet } from "./writer.js";
