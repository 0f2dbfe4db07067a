export { EventBus } from "./bus.js";
