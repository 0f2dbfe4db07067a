export { Conversations } from "./service.js";
export { Personas } from "./personas.js";
