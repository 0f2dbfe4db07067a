export { ScheduleFirer } from "./firing.js";
export { Schedules } from "./service.js";
