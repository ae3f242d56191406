import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { type RunEventRow, type RunKey, insertRunEvents } from './builder.store.js';

/** An event of a run as the recorder needs to see it: a node's streamed text is joined up. */
type RunEvent = { type: string } & ({ type: 'token'; node_id: string; text: string } | { type: string });

const isToken = (event: RunEvent): event is { type: 'token'; node_id: string; text: string } => event.type === 'token';

/** How long a run's events wait to be written together: a watcher sees them this much later at most. */
const FLUSH_MS = 200;

/**
 * Keeps what a run shows as it goes: its events, numbered on from where the run's earlier parts stopped, written
 * in batches beside the run (a node's consecutive tokens as one piece of text). Writing never holds the run up;
 * a write that fails is logged and the run goes on. `close` waits for everything to be written.
 */
export class RunRecorder {
  #pending: { seq: number; at: string; event: RunEvent }[] = [];
  #seq: number;
  #timer: NodeJS.Timeout | undefined;
  #written: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { db: Kysely<Database>; logger: Logger; now: () => Date },
    private readonly run: RunKey,
    lastSeq: number,
  ) {
    this.#seq = lastSeq;
  }

  add(event: RunEvent): void {
    const last = this.#pending.at(-1);
    if (last && isToken(event) && isToken(last.event) && last.event.node_id === event.node_id) {
      last.event = { ...last.event, text: last.event.text + event.text };
      return;
    }
    this.#pending.push({ seq: ++this.#seq, at: this.deps.now().toISOString(), event });
    this.#timer ??= setTimeout(() => this.#flush(), FLUSH_MS);
  }

  /** Writes what is left; resolves once every event is written (or its write failed and was logged). */
  close(): Promise<void> {
    this.#flush();
    return this.#written;
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const rows: RunEventRow[] = this.#pending.map(({ seq, at, event }) => ({
      run_id: this.run.id,
      seq,
      at,
      event: JSON.stringify(event),
    }));
    this.#pending = [];
    this.#written = this.#written
      .then(() => insertRunEvents(this.deps.db, rows))
      .catch((err: unknown) => this.deps.logger.warn({ err, run: this.run.id }, 'run events not written'));
  }
}
