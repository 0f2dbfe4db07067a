export { EventBus } from "./bus.js";
export type { Events, EventName, Listener } from "./bus.js";
