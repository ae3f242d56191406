import type { Broadcast } from '../adapters/broadcast/port.js';
import type { EphemeralStore } from '../adapters/ephemeral/port.js';

/** What another instance needs to take over a streamable-HTTP session: whose it is and how it was initialised. */
export interface SessionRecord {
  /** The subject of the caller who opened it; nobody else may use it. */
  caller: string;
  /** The `params` of the session's `initialize` request, replayed to rebuild the session elsewhere. */
  initialize: unknown;
}

const ENDED_CHANNEL = 'mcp-session-ended';
const keyOf = (id: string) => `mcp-session:${id}`;

/**
 * Every instance's view of the open streamable-HTTP sessions, in the shared store (Redis): a session opened on one
 * instance can be continued on any other, and one ended anywhere ends everywhere. A record lives as long as the
 * session may stay idle, and each use extends it.
 */
export class McpSessionDirectory {
  constructor(private readonly deps: { store: EphemeralStore; broadcast: Broadcast; ttlMs: number }) {}

  /** Records a session, or extends its life. */
  async record(id: string, record: SessionRecord): Promise<void> {
    await this.deps.store.put(keyOf(id), JSON.stringify(record), this.deps.ttlMs);
  }

  async find(id: string): Promise<SessionRecord | undefined> {
    const raw = await this.deps.store.peek(keyOf(id));
    return raw === undefined ? undefined : (JSON.parse(raw) as SessionRecord);
  }

  /** Ends a session everywhere: no instance may take it over, and those holding it are told to close it. */
  async end(id: string): Promise<void> {
    await this.deps.store.delete(keyOf(id));
    await this.deps.broadcast.publish(ENDED_CHANNEL, id);
  }

  /** Calls `listener` with each session ended on any instance; returns the function that stops it. */
  onEnded(listener: (id: string) => void): () => void {
    return this.deps.broadcast.subscribe(ENDED_CHANNEL, listener);
  }
}
