import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * Keeps the most recent events of each stream so that a client that reconnects with `Last-Event-ID` gets what it
 * missed. Bounded per stream and in total (the oldest streams go first), unlike the SDK's example store.
 */
export class BoundedEventStore implements EventStore {
  readonly #streams = new Map<StreamId, { id: EventId; message: JSONRPCMessage }[]>();
  #total = 0;
  #next = 0;

  constructor(
    private readonly perStream = 100,
    private readonly maxEvents = 10_000,
  ) {}

  storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const id = `${streamId}_${(++this.#next).toString(36)}`;
    let events = this.#streams.get(streamId);
    if (!events) {
      events = [];
      this.#streams.set(streamId, events);
    }
    events.push({ id, message });
    this.#total += 1;
    if (events.length > this.perStream) {
      events.shift();
      this.#total -= 1;
    }
    while (this.#total > this.maxEvents) {
      const [oldest, dropped] = this.#streams.entries().next().value as [StreamId, unknown[]];
      this.#streams.delete(oldest);
      this.#total -= dropped.length;
    }
    return Promise.resolve(id);
  }

  getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    const streamId = eventId.slice(0, eventId.lastIndexOf('_'));
    return Promise.resolve(this.#streams.has(streamId) ? streamId : undefined);
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const streamId = lastEventId.slice(0, lastEventId.lastIndexOf('_'));
    const events = this.#streams.get(streamId) ?? [];
    const from = events.findIndex((e) => e.id === lastEventId);
    for (const event of events.slice(from + 1)) await send(event.id, event.message);
    return streamId;
  }
}
