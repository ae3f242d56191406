import { randomFillSync } from 'node:crypto';
import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** One stream of one session: its events, newest last, numbered in the order they were stored. */
interface Stream {
  scope: string;
  streamId: StreamId;
  /** Random, so that the ids of the stream's events cannot be guessed: a stream id alone is the same everywhere. */
  token: string;
  events: { seq: number; message: JSONRPCMessage }[];
  next: number;
}

/** The event store of one session's transport: it sees only the streams of that session. */
export interface SessionEventStore extends EventStore {
  /** The session's own stream an event id names; the SDK refuses to resume from any other id. */
  getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined>;
  /** Forgets every event of the session, and keeps none it is given later (the session ended). */
  drop(): void;
}

const eventAfter = (stream: Stream, seq: number) => stream.events.find((e) => e.seq > seq);

/** 128 bits, base64url: 22 characters. */
const TOKEN_BYTES = 16;
/**
 * Random bytes for tokens, drawn from the CSPRNG 4 KiB at a time: every POST opens a stream, and a call into the
 * CSPRNG per stream cost more than storing its event.
 */
const pool = Buffer.allocUnsafe(TOKEN_BYTES * 256);
let drawn = pool.length;

function randomToken(): string {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  drawn += TOKEN_BYTES;
  return pool.toString('base64url', drawn - TOKEN_BYTES, drawn);
}

const ID = /^([A-Za-z0-9_-]{22})\.([0-9a-z]{1,10})$/;

/**
 * Keeps the most recent events of each stream so that a client that reconnects with `Last-Event-ID` gets what it
 * missed. Bounded per stream and in total (the streams written to least recently go first).
 *
 * Every session sees only its own streams, through `forSession`: the SDK names a session's standalone stream
 * `_GET_stream` in every session, so a store shared as is would replay one session's events to another. An event
 * id is a random stream token and a sequence number; replay of an id that is not one of the session's own replays
 * nothing, whether it was guessed or taken from someone else's stream.
 */
export class BoundedEventStore {
  /** Every stream by token, least recently written first. */
  readonly #streams = new Map<string, Stream>();
  /** Each session's streams, by the SDK's stream id. */
  readonly #scopes = new Map<string, Map<StreamId, Stream>>();
  #total = 0;

  constructor(
    private readonly perStream = 100,
    private readonly maxEvents = 10_000,
  ) {}

  /** How many events are held, for every session. */
  get size(): number {
    return this.#total;
  }

  /**
   * The store for one session of one caller. The session id is random and bound to its caller already; the caller
   * is part of the scope all the same, so that nothing but the pair reaches the events.
   */
  forSession(caller: string, sessionId: string): SessionEventStore {
    return new BoundedEventStore.#Session(this, JSON.stringify([caller, sessionId]));
  }

  /** One session's view of the store: an object of its own, with its methods shared (sessions may be many). */
  static readonly #Session = class implements SessionEventStore {
    #ended = false;

    constructor(
      private readonly store: BoundedEventStore,
      private readonly scope: string,
    ) {}

    // A message sent as the session ends (a tool call finishing) is not kept for a session that will not resume.
    storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
      return Promise.resolve(this.#ended ? `${randomToken()}.0` : this.store.#store(this.scope, streamId, message));
    }

    getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
      return Promise.resolve(this.store.#find(this.scope, eventId)?.stream.streamId);
    }

    replayEventsAfter(
      eventId: EventId,
      { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
    ): Promise<StreamId> {
      return this.store.#replay(this.scope, eventId, send);
    }

    drop(): void {
      this.#ended = true;
      this.store.#drop(this.scope);
    }
  };

  #store(scope: string, streamId: StreamId, message: JSONRPCMessage): EventId {
    let streams = this.#scopes.get(scope);
    if (!streams) {
      streams = new Map();
      this.#scopes.set(scope, streams);
    }
    let stream = streams.get(streamId);
    if (stream) {
      this.#streams.delete(stream.token);
    } else {
      stream = { scope, streamId, token: randomToken(), events: [], next: 0 };
      streams.set(streamId, stream);
    }
    this.#streams.set(stream.token, stream);
    const seq = ++stream.next;
    stream.events.push({ seq, message });
    this.#total += 1;
    if (stream.events.length > this.perStream) {
      stream.events.shift();
      this.#total -= 1;
    }
    while (this.#total > this.maxEvents) {
      const oldest = this.#streams.values().next().value;
      if (!oldest) break;
      this.#forget(oldest);
    }
    return `${stream.token}.${seq.toString(36)}`;
  }

  /** The session's own stream an event id names, and where in it the event is; nothing for any other id. */
  #find(scope: string, eventId: EventId): { stream: Stream; seq: number } | undefined {
    const match = ID.exec(eventId);
    if (!match) return undefined;
    const stream = this.#streams.get(match[1]!);
    const seq = parseInt(match[2]!, 36);
    if (!stream || stream.scope !== scope || seq > stream.next) return undefined;
    return { stream, seq };
  }

  /**
   * Sends the events of the session's stream stored after `eventId` (those still held). The SDK asks
   * `getStreamIdForEventId` first and refuses an id it does not know; one whose stream went in between replays
   * nothing, on a stream id no other stream has.
   */
  async #replay(
    scope: string,
    eventId: EventId,
    send: (eventId: EventId, message: JSONRPCMessage) => Promise<void>,
  ): Promise<StreamId> {
    const found = this.#find(scope, eventId);
    if (!found) return `_gone_${randomToken()}`;
    const { stream } = found;
    // Read afresh after each send: events stored while replaying are sent too.
    let event = eventAfter(stream, found.seq);
    while (event) {
      await send(`${stream.token}.${event.seq.toString(36)}`, event.message);
      event = eventAfter(stream, event.seq);
    }
    return stream.streamId;
  }

  #forget(stream: Stream): void {
    this.#streams.delete(stream.token);
    this.#total -= stream.events.length;
    const streams = this.#scopes.get(stream.scope);
    streams?.delete(stream.streamId);
    if (streams?.size === 0) this.#scopes.delete(stream.scope);
  }

  #drop(scope: string): void {
    for (const stream of this.#scopes.get(scope)?.values() ?? []) this.#forget(stream);
  }
}
