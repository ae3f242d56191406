import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { MAX_KEYS_PER_USER } from '../../src/modules/api-keys/api-keys.service.js';
import { hashSecret } from '../../src/modules/auth/tokens.js';
import { linear } from '../builder/helpers.js';
import { startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, accessToken, call, createUser } from '../helpers/auth.js';
import { type Json, requester } from '../helpers/client.js';
import {
  createPostgresDatabase,
  describeWithService,
  probePostgresAndRedis,
  sharedInstanceEnv,
} from '../helpers/services.js';

/**
 * Read-modify-write races, fought over real HTTP: many requests for the same thing at once, alternating between
 * every instance there is. On PostgreSQL two instances share one database (as behind a load balancer), so only the
 * database can keep the writes apart; on SQLite one instance serves them all. Whatever order the requests land in,
 * a limit holds, versions stay gap-free and unique, a rotation is never lost, and no client sees a 500.
 */
const PARALLEL = 16;
const ON_POSTGRES = process.env.TEST_DATABASE === 'postgres';

const services = await probePostgresAndRedis();

describeWithService('concurrent writes on PostgreSQL, through two instances', services, () => {
  const apps: App[] = [];
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    const env = { ...sharedInstanceEnv(database.url, 'race'), ADMIN_PASSWORD };
    // One after the other: the first migrates the database, the second finds it migrated.
    apps.push(await startTestApp(env));
    apps.push(await startTestApp(env));
  }, 60_000);

  afterAll(async () => {
    for (const app of apps) await app.close();
    await drop?.();
  });

  racesOn(apps);
});

// The suite's own database: in-memory SQLite, or PostgreSQL under TEST_DATABASE=postgres (see test/helpers/app.ts).
describe(`concurrent writes through one instance on ${ON_POSTGRES ? 'PostgreSQL' : 'SQLite'}`, () => {
  const apps: App[] = [];

  beforeAll(async () => {
    apps.push(await startTestApp({ ADMIN_PASSWORD }));
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  racesOn(apps);
});

/** The races, each request sent to the next of `apps` in turn (filled in before the first test runs). */
function racesOn(apps: App[]): void {
  /** The instance the i-th request reaches: round robin, as a load balancer without stickiness would. */
  const via = (i: number): App => apps[i % apps.length]!;

  /** `count` requests at once, the i-th made by `send(app, i)` on the instance its turn falls to. */
  const atOnce = <T>(count: number, send: (app: App, i: number) => Promise<T>): Promise<T[]> =>
    Promise.all(Array.from({ length: count }, (_, i) => send(via(i), i)));

  /** A new user, signed in: every test races on rows of its own. */
  async function newUser(): Promise<{ id: string; token: string }> {
    const username = `racer_${randomBytes(4).toString('hex')}`;
    const user = await createUser(via(0), username);
    return { id: user.id, token: await accessToken(via(0), username) };
  }

  const statuses = (results: { status: number }[]) => results.map((r) => r.status).sort((x, y) => x - y);

  describe('API keys', () => {
    const createKey = (app: App, token: string, name: string) =>
      call(app, 'POST', '/api/v1/api-keys', { token, body: { name } });

    it(`never lets parallel creations exceed ${MAX_KEYS_PER_USER} keys, from none or from some`, async () => {
      const { token } = await newUser();
      const first = await atOnce(PARALLEL, (app, i) => createKey(app, token, `key ${i}`));
      expect(statuses(first)).toEqual([
        ...Array<number>(MAX_KEYS_PER_USER).fill(201),
        ...Array<number>(PARALLEL - MAX_KEYS_PER_USER).fill(400),
      ]);
      for (const refused of first.filter((r) => r.status === 400))
        expect(refused.body).toMatchObject({ message: `API key limit reached: at most ${MAX_KEYS_PER_USER} per user` });

      // Two slots freed: exactly two of the next rush get them.
      const created = first.filter((r) => r.status === 201).map((r) => r.body.key_id as string);
      for (const id of created.slice(0, 2))
        expect((await call(via(1), 'DELETE', `/api/v1/api-keys/${id}`, { token })).status).toBe(204);
      const second = await atOnce(PARALLEL, (app, i) => createKey(app, token, `again ${i}`));
      expect(statuses(second)).toEqual([...Array<number>(2).fill(201), ...Array<number>(PARALLEL - 2).fill(400)]);

      const listed = await call(via(0), 'GET', '/api/v1/api-keys', { token });
      expect(listed.body).toHaveLength(MAX_KEYS_PER_USER);
    });

    it('makes parallel rotations of one key take turns: each its own generation, one live key at the end', async () => {
      const { id: userId, token } = await newUser();
      const created = await createKey(via(0), token, 'rotated');
      const keyId = created.body.key_id as string;
      const rotations = await atOnce(PARALLEL, (app) =>
        call(app, 'POST', `/api/v1/api-keys/${keyId}/rotate`, { token }),
      );
      expect(statuses(rotations)).toEqual(Array<number>(PARALLEL).fill(200));

      // Only the value of the rotation that went last still works, on every instance; the original works nowhere.
      const values = rotations.map((r) => r.body.new_api_key as string);
      expect(new Set(values).size).toBe(PARALLEL);
      const live = await liveKeys(values);
      expect(live).toHaveLength(1);
      expect(await liveKeys([created.body.api_key as string])).toEqual([]);

      // Had two rotations read the same generation, both would have written the next one, and tokens exchanged
      // for the value the other overwrote would live on: the generations rotated to are 2..N+1, each once.
      const admin = await accessToken(via(1), 'admin', ADMIN_PASSWORD);
      const audit = await call(via(1), 'GET', `/api/v1/audit-log?type=api_key.rotated&user_id=${userId}&limit=100`, {
        token: admin,
      });
      expect(audit.status).toBe(200);
      const generations = (audit.body.items as { details: Json }[])
        .filter((event) => event.details.key_id === keyId)
        .map((event) => event.details.generation as number)
        .sort((x, y) => x - y);
      expect(generations).toEqual(Array.from({ length: PARALLEL }, (_, i) => i + 2));
    });

    /** The keys among `values` that authenticate on every instance (and on none, for the rest). */
    async function liveKeys(values: string[]): Promise<string[]> {
      const live: string[] = [];
      for (const apiKey of values) {
        const answers = await Promise.all(apps.map((app) => call(app, 'GET', '/auth/me', { apiKey })));
        const codes = new Set(answers.map((answer) => answer.status));
        expect(codes.size, 'every instance answers alike').toBe(1);
        if (codes.has(200)) live.push(apiKey);
        else expect([...codes]).toEqual([401]);
      }
      return live;
    }
  });

  describe('service principals', () => {
    it('makes parallel secret rotations take turns: one generation each, one live secret at the end', async () => {
      const { token } = await newUser();
      const created = await call(via(0), 'POST', '/api/v1/service-principals', {
        token,
        body: { name: 'Rotated Bot', description: 'rotated in parallel' },
      });
      expect(created.status).toBe(201);
      const id = created.body.service_id as string;
      const rotations = await atOnce(PARALLEL, (app) =>
        call(app, 'POST', `/api/v1/service-principals/${id}/rotate-secret`, { token, body: {} }),
      );
      expect(statuses(rotations)).toEqual(Array<number>(PARALLEL).fill(200));
      const secrets = rotations.map((r) => r.body.client_secret as string);
      expect(new Set(secrets).size).toBe(PARALLEL);

      // Read from the database itself: the token endpoint's rate limit would not let every secret be tried.
      const row = await via(0)
        .infrastructure.db.kysely.selectFrom('service_principals')
        .select(['secret_generation', 'secret_hash'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row.secret_generation).toBe(PARALLEL + 1);
      expect(secrets.filter((secret) => hashSecret(secret) === row.secret_hash)).toHaveLength(1);
    });
  });

  describe('workflow versions', () => {
    const builder = (app: App, token: string) => requester(app, { token }, 'builder');

    async function newWorkflow(token: string, body: Json = linear('Start')): Promise<string> {
      const created = await builder(via(0), token).post<Json>('/api/builder/workflows', body);
      expect(created.status).toBe(201);
      return created.body.workflow_id as string;
    }

    const versionsOf = async (token: string, id: string) =>
      (await builder(via(1), token).get<Json[]>(`/api/builder/workflows/${id}/versions`)).body;

    it('numbers parallel saves without a base version 2..N+1, each once, with no gap; the last is current', async () => {
      const { token } = await newUser();
      const id = await newWorkflow(token);
      // Every fourth request restores version 1 instead: a rollback is a save too.
      const saves = await atOnce(PARALLEL, (app, i) =>
        i % 4 === 3
          ? builder(app, token).post<Json>(`/api/builder/workflows/${id}/rollback`, { version: 1 })
          : builder(app, token).put<Json>(`/api/builder/workflows/${id}`, linear(`Save ${i}`)),
      );
      expect(statuses(saves)).toEqual(Array<number>(PARALLEL).fill(200));
      const expected = Array.from({ length: PARALLEL }, (_, i) => i + 2);
      expect(saves.map((s) => s.body.version as number).sort((x, y) => x - y)).toEqual(expected);

      // Each save answered with the version that holds what it sent.
      const versions = await versionsOf(token, id);
      expect(versions.map((v) => v.version)).toEqual([...expected].reverse().concat(1));
      for (const [i, save] of saves.entries()) {
        const stored = await builder(via(i), token).get<Json>(
          `/api/builder/workflows/${id}/versions/${save.body.version as number}`,
        );
        expect((stored.body.workflow as Json).name).toBe(i % 4 === 3 ? 'Start' : `Save ${i}`);
        expect(stored.body.source).toBe(i % 4 === 3 ? 'rollback' : 'update');
      }

      // The current version is the highest, on every instance, with the content of the save that made it.
      const last = saves.find((s) => s.body.version === PARALLEL + 1)!;
      for (const app of apps) {
        const current = await builder(app, token).get<Json>(`/api/builder/workflows/${id}`);
        expect(current.body).toMatchObject({ version: PARALLEL + 1, name: last.body.name });
      }
    });

    it('lets exactly one of parallel saves based on the same version win; the others are 409', async () => {
      const { token } = await newUser();
      const id = await newWorkflow(token);
      // Half name the base version in the body, half in If-Match.
      const saves = await atOnce(PARALLEL, (app, i) =>
        i % 2 === 0
          ? builder(app, token).put<Json>(`/api/builder/workflows/${id}`, { ...linear(`Edit ${i}`), version: 1 })
          : builder(app, token).put<Json>(`/api/builder/workflows/${id}`, linear(`Edit ${i}`), {
              headers: { 'If-Match': '"1"' },
            }),
      );
      expect(statuses(saves)).toEqual([200, ...Array<number>(PARALLEL - 1).fill(409)]);
      const winner = saves.find((s) => s.status === 200)!;
      expect(winner.body.version).toBe(2);
      for (const lost of saves.filter((s) => s.status === 409))
        expect(lost.body).toMatchObject({ error: 'conflict', code: 'WORKFLOW_VERSION_CONFLICT', current_version: 2 });

      const versions = await versionsOf(token, id);
      expect(versions.map((v) => [v.version, v.name])).toEqual([
        [2, winner.body.name],
        [1, 'Start'],
      ]);
    });

    it('keeps versions gap-free when saves with and without a base version race', async () => {
      const { token } = await newUser();
      const id = await newWorkflow(token);
      const saves = await atOnce(PARALLEL, (app, i) =>
        builder(app, token).put<Json>(`/api/builder/workflows/${id}`, {
          ...linear(`Mixed ${i}`),
          ...(i % 2 === 0 && { version: 1 }),
        }),
      );
      const based = saves.filter((_, i) => i % 2 === 0);
      const unbased = saves.filter((_, i) => i % 2 === 1);
      // Every save without a base lands; of those based on version 1, at most the one that went first.
      expect(statuses(unbased)).toEqual(Array<number>(PARALLEL / 2).fill(200));
      expect(statuses(based).filter((status) => status !== 200 && status !== 409)).toEqual([]);
      const won = based.filter((s) => s.status === 200);
      expect(won.length).toBeLessThanOrEqual(1);
      for (const w of won) expect(w.body.version).toBe(2);

      const landed = PARALLEL / 2 + won.length;
      const versions = await versionsOf(token, id);
      expect(versions.map((v) => v.version)).toEqual(Array.from({ length: landed + 1 }, (_, i) => landed + 1 - i));
      const current = await builder(via(1), token).get<Json>(`/api/builder/workflows/${id}`);
      expect(current.body.version).toBe(landed + 1);
    });

    // A save that found the workflow before its deletion and writes after it must still answer (404), and a save
    // and a deletion interleaved must not deadlock (a 500). A request that never answers fails by the timeout.
    it('answers saves racing the deletion of their workflow with 200 or 404, and the deletion with 204', async () => {
      const { token } = await newUser();
      // Several workflows, each with tags (rows a save and a deletion both lock), for more chances to interleave.
      const ids = await Promise.all(Array.from({ length: 4 }, () => newWorkflow(token, tagged('Start', 0))));
      for (const { deleted, saves } of await Promise.all(ids.map((id) => saveThroughDeletion(token, id)))) {
        expect(deleted).toBe(204);
        expect(saves).toContain(200);
        expect(saves.filter((status) => status !== 200 && status !== 404)).toEqual([]);
        // Each lane went on until the workflow was gone.
        expect(saves.filter((status) => status === 404)).toHaveLength(LANES);
      }
      for (const id of ids)
        for (const app of apps) {
          expect((await builder(app, token).get(`/api/builder/workflows/${id}`)).status).toBe(404);
          expect((await builder(app, token).get(`/api/builder/workflows/${id}/versions`)).status).toBe(404);
        }
    }, 30_000);

    const LANES = 4;
    const tagged = (name: string, n: number) => ({ ...linear(name), tags: ['race', `tag-${n}`] });

    /**
     * Lanes that each save the workflow again and again until it is gone, and its deletion, sent once a save has
     * landed: whenever the deletion runs, saves are in flight. Answers the deletion's status and every save's.
     */
    async function saveThroughDeletion(token: string, id: string): Promise<{ deleted: number; saves: number[] }> {
      const saves: number[] = [];
      let landed!: () => void;
      const firstLanded = new Promise<void>((resolve) => (landed = resolve));
      const lane = async (n: number) => {
        try {
          for (let i = 0; i < 50; i++) {
            const path = `/api/builder/workflows/${id}`;
            const saved = await builder(via(n + i), token).put(path, tagged(`Lane ${n}`, i));
            saves.push(saved.status);
            if (saved.status !== 200) return;
            landed();
          }
        } finally {
          // A lane that ends before any save landed must not hold the deletion back: the assertions say why.
          landed();
        }
      };
      const deletion = firstLanded.then(() => builder(via(1), token).delete(`/api/builder/workflows/${id}`));
      const [deleted] = await Promise.all([deletion, ...Array.from({ length: LANES }, (_, n) => lane(n))]);
      return { deleted: deleted.status, saves };
    }
  });
}
