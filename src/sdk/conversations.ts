// Conversations (threads of turns with one agent) and personas (narrowings of an agent for a
// conversation): their wire shapes, snake_case as the server sends them, and their calls.
import { eventStream, type StreamEvent, type StreamOptions } from "./sse.js";
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type { List } from "./types.js";

export type ConversationStatus = "open" | "closed";

export interface Conversation {
  id: string;
  agent_id: string;
  org_id: string;
  title: string | null;
  /** Who started it (their identity's name). */
  started_by: string;
  persona_id: string | null;
  /** The areas of the person who started it, kept for its whole life. */
  areas: string[];
  status: ConversationStatus;
  /** Its own git branch and the branch it lands into, when created with `repo`. */
  branch?: string | null;
  base?: string | null;
  created_at: string;
  last_message_at: string | null;
}

export interface ConversationCreateRequest {
  title?: string;
  persona_id?: string;
  /** A git repository folder in the agent's home: the conversation works on a branch of its own. */
  repo?: string;
}

export type MessageRole = "user" | "agent";

export interface ConversationMessage {
  id: string;
  role: MessageRole;
  text: string;
  /** Who sent a person's message (their identity's name at that moment). */
  author?: string | null;
  /** The turn (a run) the message started or ended. */
  run_id?: string | null;
  at: string;
}

/** The answer to a posted message: the message and the turn it starts (or queues). */
export interface MessageSent {
  message: ConversationMessage;
  run_id: string;
}

export interface Persona {
  id: string;
  agent_id: string;
  name: string;
  instructions?: string | null;
  /** The area (a set of folders of the home) it is homed in. */
  area?: string | null;
  /** The agent's tools it keeps (by name); absent: all of them. */
  tools?: string[] | null;
  /** The agent's secrets it keeps (by name); absent: all of them. */
  secrets?: string[] | null;
  created_at?: string;
}

export interface PersonaCreateRequest {
  name: string;
  instructions?: string;
  area?: string;
  tools?: string[];
  secrets?: string[];
}

/** An event of a conversation's stream: a message, output, a model or tool call, an approval, an exit... */
export type ConversationEvent = StreamEvent;

/** A posted message's text is at most this many bytes (UTF-8); more is `run.input_too_large`. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

export class ConversationsApi {
  constructor(private readonly http: Transport) {}

  /** Starts a conversation with an agent, optionally as one of its personas. */
  create(
    agentId: string,
    body: ConversationCreateRequest = {},
    opts: RequestOptions = {},
  ): Promise<Conversation> {
    return this.http.json("POST", `/api/agents/${seg(agentId)}/conversations`, { ...opts, json: body });
  }
  /** An agent's conversations. */
  list(agentId: string, opts: RequestOptions = {}): Promise<List<Conversation>> {
    return this.http.json("GET", `/api/agents/${seg(agentId)}/conversations`, opts);
  }
  get(id: string, opts: RequestOptions = {}): Promise<Conversation> {
    return this.http.json("GET", `/api/conversations/${seg(id)}`, opts);
  }
  /** Posts a person's message; it starts a turn, or queues behind the one going on. */
  send(id: string, text: string, opts: RequestOptions = {}): Promise<MessageSent> {
    return this.http.json("POST", `/api/conversations/${seg(id)}/messages`, { ...opts, json: { text } });
  }
  /** The thread so far, oldest first. */
  messages(id: string, opts: RequestOptions = {}): Promise<List<ConversationMessage>> {
    return this.http.json("GET", `/api/conversations/${seg(id)}/messages`, opts);
  }
  /** Closes it: a new message is then `conversation.closed`. */
  close(id: string, opts: RequestOptions = {}): Promise<Conversation> {
    return this.http.json("POST", `/api/conversations/${seg(id)}/close`, opts);
  }
  /**
   * Every event of every turn, as it happens, from the first (or after `opts.after`). A dropped
   * connection is opened again where it left off. The stream goes on until the loop is left or
   * `opts.signal` aborts it.
   */
  events(id: string, opts: StreamOptions = {}): AsyncGenerator<ConversationEvent, void> {
    return eventStream(this.http, `/api/conversations/${seg(id)}/events`, opts);
  }
}

export class PersonasApi {
  constructor(private readonly http: Transport) {}

  create(agentId: string, body: PersonaCreateRequest, opts: RequestOptions = {}): Promise<Persona> {
    return this.http.json("POST", `/api/agents/${seg(agentId)}/personas`, { ...opts, json: body });
  }
  list(agentId: string, opts: RequestOptions = {}): Promise<List<Persona>> {
    return this.http.json("GET", `/api/agents/${seg(agentId)}/personas`, opts);
  }
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.http.empty("DELETE", `/api/personas/${seg(id)}`, opts);
  }
}

/** One agent's conversations. */
export class AgentConversations {
  constructor(
    private readonly api: ConversationsApi,
    private readonly agentId: string,
  ) {}

  create(body: ConversationCreateRequest = {}, opts: RequestOptions = {}): Promise<Conversation> {
    return this.api.create(this.agentId, body, opts);
  }
  list(opts: RequestOptions = {}): Promise<List<Conversation>> {
    return this.api.list(this.agentId, opts);
  }
  get(id: string, opts: RequestOptions = {}): Promise<Conversation> {
    return this.api.get(id, opts);
  }
  send(id: string, text: string, opts: RequestOptions = {}): Promise<MessageSent> {
    return this.api.send(id, text, opts);
  }
  messages(id: string, opts: RequestOptions = {}): Promise<List<ConversationMessage>> {
    return this.api.messages(id, opts);
  }
  close(id: string, opts: RequestOptions = {}): Promise<Conversation> {
    return this.api.close(id, opts);
  }
  events(id: string, opts: StreamOptions = {}): AsyncGenerator<ConversationEvent, void> {
    return this.api.events(id, opts);
  }
}

/** One agent's personas. */
export class AgentPersonas {
  constructor(
    private readonly api: PersonasApi,
    private readonly agentId: string,
  ) {}

  create(body: PersonaCreateRequest, opts: RequestOptions = {}): Promise<Persona> {
    return this.api.create(this.agentId, body, opts);
  }
  list(opts: RequestOptions = {}): Promise<List<Persona>> {
    return this.api.list(this.agentId, opts);
  }
  delete(id: string, opts: RequestOptions = {}): Promise<void> {
    return this.api.delete(id, opts);
  }
}
