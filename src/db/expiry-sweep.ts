import type { Kysely } from 'kysely';
import type { Logger } from '../logger.js';
import type { Database } from './database.js';

/** Tables of credentials that end at their `expires_at` (ISO text) and are of no use for long after. */
export type ExpiringTable = 'refresh_tokens' | 'oauth_codes' | 'oauth_refresh_tokens';

/** How long an expired credential is kept: presented meanwhile, it is still told apart as expired or reused. */
const KEEP_EXPIRED_MS = 7 * 24 * 60 * 60_000;
const EVERY_MS = 60 * 60_000;

export interface ExpirySweep {
  /** Deletes what expired before the keeping period, in every table; returns how many rows. */
  sweep(): Promise<number>;
  /** Sweeps now and then every hour (the timer does not keep the process alive). */
  start(): void;
  stop(): void;
}

/**
 * Removes a module's expired credentials, whoever's they are: a system sweep, the one kind of statement on these
 * tables that names no owner, because it acts for nobody and removes only what can no longer be used. Without it
 * every token ever issued would stay, from sessions that simply lapsed. Instances sweeping at once delete the same
 * rows twice, harmlessly.
 */
export function expirySweep(
  db: Kysely<Database>,
  tables: ExpiringTable[],
  deps: { now: () => Date; logger: Logger },
): ExpirySweep {
  let timer: NodeJS.Timeout | undefined;
  const sweep = async (): Promise<number> => {
    const before = new Date(deps.now().getTime() - KEEP_EXPIRED_MS).toISOString();
    let deleted = 0;
    for (const table of tables) {
      const result = await db.deleteFrom(table).where('expires_at', '<', before).executeTakeFirst();
      deleted += Number(result.numDeletedRows);
    }
    return deleted;
  };
  const sweepQuietly = () =>
    void sweep().catch((err: unknown) => deps.logger.warn({ err, tables }, 'expired credentials not swept'));
  return {
    sweep,
    start() {
      sweepQuietly();
      timer ??= setInterval(sweepQuietly, EVERY_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
