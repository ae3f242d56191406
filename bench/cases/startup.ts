import type { Context } from '../context.js';
import { type Row, ratioAtMostRow } from '../report.js';
import { freshDatabase, startService } from '../service.js';

/**
 * Start-up time: from spawning `agent-service serve` to the first 200 from /health/ready, on an empty database and
 * on one with 100,000 users, alternately, median of each. Both are copies of the same migrated template with its
 * bootstrap administrator, so both starts do the same work but for the data they hold.
 */

const SECTION = 'Start-up to /health/ready';

export async function startupRow(ctx: Context, largeDatabase: string, users: number): Promise<Row> {
  const empty = await freshDatabase(ctx.tmp, 'startup-empty');
  const start = async (name: string, database: string) => {
    const service = await startService({ name, database, logDir: ctx.logDir });
    await service.stop();
    return service.startupMs;
  };
  ctx.log(`startup: ${ctx.settings.startupRounds} starts each, empty database and ${users} users`);
  const times = { empty: [] as number[], large: [] as number[] };
  for (let round = 0; round < ctx.settings.startupRounds; round++) {
    times.empty.push(await start(`startup-empty-${round}`, empty));
    times.large.push(await start(`startup-${users}-${round}`, largeDatabase));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return ratioAtMostRow(
    SECTION,
    `${users.toLocaleString('en')} users vs empty database`,
    median(times.large),
    median(times.empty),
    'ms',
    1.5,
    `empty: ${times.empty.map((t) => t.toFixed(0)).join(', ')} ms; ${users} users: ${times.large.map((t) => t.toFixed(0)).join(', ')} ms`,
  );
}
