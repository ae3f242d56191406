import { adminToken, checkOk, createApiKey } from '../client.js';
import type { Context } from '../context.js';
import { interleavedRounds } from '../load.js';
import { type Row, throughputRow } from '../report.js';
import { seedApiKeys } from '../seed.js';
import { freshDatabase, startService } from '../service.js';

/**
 * API-key authentication at scale: `GET /auth/me` with X-API-Key (c=50) on a service holding 10,000 stored keys,
 * against the same on one holding 10. Keys are seeded into each database before its service starts; the key used
 * is created through the API.
 */

const SECTION = 'API-key authentication, 10,000 stored keys vs 10';

export async function apiKeyScaleRow(ctx: Context): Promise<Row> {
  const databases = {
    many: await freshDatabase(ctx.tmp, 'keys-10000'),
    few: await freshDatabase(ctx.tmp, 'keys-10'),
  };
  seedApiKeys(databases.many, 10_000);
  seedApiKeys(databases.few, 10);
  const many = await startService({ name: 'service-keys-10000', database: databases.many, logDir: ctx.logDir });
  try {
    const few = await startService({ name: 'service-keys-10', database: databases.few, logDir: ctx.logDir });
    try {
      const target = async (name: string, main: string) => {
        const key = await createApiKey(main, await adminToken(main));
        const headers = { 'X-API-Key': key };
        await checkOk(`${name} GET /auth/me`, `${main}/auth/me`, { headers });
        return { name, url: `${main}/auth/me`, headers, connections: 50 };
      };
      const targets = [await target('10 keys', few.main), await target('10,000 keys', many.main)];
      ctx.log(`api keys: ${ctx.settings.rounds} interleaved rounds, 10 keys vs 10,000`);
      const stats = await interleavedRounds(targets, ctx.settings);
      return throughputRow(
        SECTION,
        'GET /auth/me X-API-Key, c=50, 10,000 keys vs 10',
        stats.get('10,000 keys')!,
        stats.get('10 keys')!,
        0.9,
      );
    } finally {
      await few.stop();
    }
  } finally {
    await many.stop();
  }
}
