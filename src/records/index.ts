export { Records } from "./writer.js";
