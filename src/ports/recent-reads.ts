import type { Broadcast } from '../adapters/broadcast/port.js';

/**
 * What was read from a store, vouched for a short while by key: a client's burst of requests costs one read, not
 * one each. Forgetting is at once, and a read that was under way when something was forgotten is not remembered
 * after it, so what was forgotten does not come back from a read that began before. At most `limit` entries: the
 * oldest goes first.
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

  /** Reads `key` with `read`, and remembers what it found unless something was forgotten while it read. */
  async read<T extends V | undefined>(key: string, now: number, read: () => Promise<T>): Promise<T> {
    const forgotten = this.#forgotten;
    const value = await read();
    if (value !== undefined && forgotten === this.#forgotten) {
      if (this.#entries.size >= this.limit) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { value, until: now + this.ttlMs });
    }
    return value;
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

/**
 * What to forget, told to every instance through one broadcast channel: `tell` forgets here at once and publishes,
 * and what other instances publish is forgotten here as it arrives. Until `share` is given a broadcast, or should a
 * message be lost, another instance forgets only when its recent reads expire.
 */
export class SharedForgetting<M extends string> {
  #broadcast: Broadcast | undefined;

  constructor(
    private readonly channel: string,
    private readonly forget: (message: string) => void,
    /** Told of a message that could not be published (it was forgotten here). */
    private readonly unsent: (err: unknown) => void,
  ) {}

  /** Publishes through `broadcast`, and forgets what arrives on it; returns the stop. */
  share(broadcast: Broadcast): () => void {
    this.#broadcast = broadcast;
    const stop = broadcast.subscribe(this.channel, (message) => this.forget(message));
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
}
