export { Records, both, redactDeep, runSet } from "./writer.js";
export type { Redacts, RecordsOptions } from "./writer.js";
