// Conversations (threads of turns with one agent) and personas (narrowings of an agent for a
// conversation): their wire shapes, snake_case as the server sends them, and their calls.
import { eventStream, type StreamEvent, type StreamOptions } from "./sse.js";
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  Conversation,
  ConversationCreateRequest,
  ConversationDiff,
  ConversationForkRequest,
  ConversationMessage,
  ConversationMessageCreated,
  List,
  Persona,
  PersonaCreateRequest,
} from "./types.js";

/** An event of a conversation's stream: a message, output, a model or tool call, an approval, an exit... */
export type ConversationStreamEvent = StreamEvent;

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
  send(id: string, text: string, opts: RequestOptions = {}): Promise<ConversationMessageCreated> {
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
  /** What its branch changed against its base (a conversation made with `repo`). */
  diff(id: string, opts: RequestOptions = {}): Promise<ConversationDiff> {
    return this.http.json("GET", `/api/conversations/${seg(id)}/diff`, opts);
  }
  /** Lands its branch into its base (owners and admins); a conflict is `branch.conflict`. */
  land(id: string, opts: RequestOptions = {}): Promise<{ landed: true; commit: string }> {
    return this.http.json("POST", `/api/conversations/${seg(id)}/land`, opts);
  }
  /**
   * A new conversation from this one: its messages up to `at_message` (its place, 1 the first,
   * or a message's id; absent: all), its persona, areas and version; a branch conversation's
   * fork gets a branch from its head holding its uncommitted changes.
   */
  fork(id: string, body: ConversationForkRequest = {}, opts: RequestOptions = {}): Promise<Conversation> {
    return this.http.json("POST", `/api/conversations/${seg(id)}/fork`, { ...opts, json: body });
  }
  /**
   * Every event of every turn, as it happens, from the first (or after `opts.after`). A dropped
   * connection is opened again where it left off. The stream goes on until the loop is left or
   * `opts.signal` aborts it.
   */
  events(id: string, opts: StreamOptions = {}): AsyncGenerator<ConversationStreamEvent, void> {
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
  send(id: string, text: string, opts: RequestOptions = {}): Promise<ConversationMessageCreated> {
    return this.api.send(id, text, opts);
  }
  messages(id: string, opts: RequestOptions = {}): Promise<List<ConversationMessage>> {
    return this.api.messages(id, opts);
  }
  close(id: string, opts: RequestOptions = {}): Promise<Conversation> {
    return this.api.close(id, opts);
  }
  events(id: string, opts: StreamOptions = {}): AsyncGenerator<ConversationStreamEvent, void> {
    return this.api.events(id, opts);
  }
  /** What a branch conversation (one started with `repo`) changed against its base. */
  diff(id: string, opts: RequestOptions = {}): Promise<ConversationDiff> {
    return this.api.diff(id, opts);
  }
  /** Lands a branch conversation's branch into its base (owners and admins). */
  land(id: string, opts: RequestOptions = {}): Promise<{ landed: true; commit: string }> {
    return this.api.land(id, opts);
  }
  /** A new conversation from this one up to a message, with its branch's uncommitted work. */
  fork(id: string, body: ConversationForkRequest = {}, opts: RequestOptions = {}): Promise<Conversation> {
    return this.api.fork(id, body, opts);
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
