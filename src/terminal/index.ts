// The agents' terminals: sessions over boxd's pty op, and what a viewer of one is.
export { Terminals, type Attachment } from "./service.js";
export type { TerminalSession, Viewer } from "./session.js";
