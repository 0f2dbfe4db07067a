export { Conversations, type ConversationsOptions } from "./service.js";
export { Personas, type PersonasOptions } from "./personas.js";
