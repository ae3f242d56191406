import { randomUUID } from 'node:crypto';
import type { Broadcast } from '../adapters/broadcast/port.js';

/**
 * What was read from a store, vouched for a short while by key: a client's burst of requests costs one read, not
 * one each. Forgetting is at once, and a read that was under way when something was forgotten is not remembered
 * after it, so what was forgotten does not come back from a read that began before. At most `limit` entries: the
 * oldest goes first. A `ttlMs` of 0 remembers nothing.
 */
export class RecentReads<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();
  /** Bumped by every forgetting. */
  #forgotten = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly limit: number,
  ) {}

  /** The value read within the last `ttlMs` (epoch ms `now`), if any. */
  get(key: string, now: number): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.until > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  /** The value read within the last `ttlMs`, else what `read` finds now (remembered as `read` says). */
  async through<T extends V | undefined>(key: string, now: number, read: () => Promise<T>): Promise<V | T> {
    return this.get(key, now) ?? this.read(key, now, read);
  }

  /** Reads `key` with `read`, and remembers what it found unless something was forgotten while it read. */
  async read<T extends V | undefined>(key: string, now: number, read: () => Promise<T>): Promise<T> {
    const forgotten = this.#forgotten;
    const value = await read();
    if (value !== undefined && forgotten === this.#forgotten && this.ttlMs > 0) {
      if (this.#entries.size >= this.limit) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { value, until: now + this.ttlMs });
    }
    return value;
  }

  /**
   * Replaces the value of `key`, if one is remembered, with what `change` makes of it: a write of this instance's
   * own that keeps the value good. Reads under way are not remembered after it (they may have read before the write).
   */
  revise(key: string, change: (value: V) => V): void {
    this.#forgotten += 1;
    const entry = this.#entries.get(key);
    if (entry) entry.value = change(entry.value);
  }

  /** Drops the entry of `key`, which its reader found no longer good; unlike forgetting, reads under way are kept. */
  drop(key: string): void {
    this.#entries.delete(key);
  }

  /** Forgets the entry of `key`, or every entry whose value `matches`. */
  forget(which: string | ((value: V) => boolean)): void {
    this.#forgotten += 1;
    if (typeof which === 'string') {
      this.#entries.delete(which);
      return;
    }
    for (const [key, { value }] of this.#entries) if (which(value)) this.#entries.delete(key);
  }
}

/** A message to forget by, `<kind>:<id>` (`session:…`, `user:…`), as its kind and the id after the first colon. */
export function kindAndId(message: string): { kind: string; id: string } {
  const at = message.indexOf(':');
  return { kind: message.slice(0, at), id: message.slice(at + 1) };
}

/** How a message for the other instances begins: then the sender's origin, a space, and the message. */
const OTHERS = '@others:';

/**
 * What to forget, told to every instance through one broadcast channel: `tell` forgets here at once and publishes,
 * and what other instances publish is forgotten here as it arrives. Until `share` is given a broadcast, or should a
 * message be lost, another instance forgets only when its recent reads expire.
 */
export class SharedForgetting<M extends string> {
  #broadcast: Broadcast | undefined;
  /** This instance, in the messages `tellOthers` sends: those come back here too, and are not for here. */
  readonly #origin = randomUUID();

  constructor(
    private readonly channel: string,
    private readonly forget: (message: string) => void,
    /** Told of a message that could not be published (it was forgotten here). */
    private readonly unsent: (err: unknown) => void,
  ) {}

  /** Publishes through `broadcast`, and forgets what arrives on it; returns the stop. */
  share(broadcast: Broadcast): () => void {
    this.#broadcast = broadcast;
    const stop = broadcast.subscribe(this.channel, (message) => {
      if (!message.startsWith(OTHERS)) return this.forget(message);
      const space = message.indexOf(' ');
      if (message.slice(OTHERS.length, space) !== this.#origin) this.forget(message.slice(space + 1));
    });
    return () => {
      stop();
      if (this.#broadcast === broadcast) this.#broadcast = undefined;
    };
  }

  /** Forgets `message` here, then tells the other instances; resolves once it is sent, never rejects. */
  async tell(message: M): Promise<void> {
    this.forget(message);
    await this.#broadcast?.publish(this.channel, message).catch(this.unsent);
  }

  /**
   * Tells the other instances to forget `message`, not this one: it changed the value itself and keeps it up to
   * date (`RecentReads.revise`). Resolves once it is sent, never rejects.
   */
  async tellOthers(message: M): Promise<void> {
    await this.#broadcast?.publish(this.channel, `${OTHERS}${this.#origin} ${message}`).catch(this.unsent);
  }
}
