export { parseHomePath } from "./paths.js";
export { readHomeFile, writeHomeFile } from "./files.js";
export type { ReadOptions, WriteOptions } from "./files.js";
export { HomeMeter, measure, toMib } from "./measure.js";
export type { Measurement } from "./measure.js";
