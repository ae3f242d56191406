import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cachingDecisions } from '../../src/adapters/authz/cached.js';
import { createEmbeddedAuthz } from '../../src/adapters/authz/embedded.js';
import type { AuthzService } from '../../src/adapters/authz/port.js';
import { type Db, createDb } from '../../src/db/create-db.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { authorizationModel } from '../../src/modules/authz/model.js';

/**
 * The decision cache in front of the real embedded evaluator (migrated in-memory SQLite). The evaluator is
 * wrapped only to count the checks that reach it, and to hold one back while a tuple changes.
 */
describe('authorization decision cache', () => {
  let db: Db;
  let evaluator: AuthzService;
  let asked: number;
  let hold: Promise<void> | undefined;
  let clock: number;
  let authz: AuthzService;

  const executor = { user: 'user:ann', relation: 'executor', object: 'tool:search_web' };
  const mayCall = () => authz.check(executor.user, executor.relation, executor.object);

  beforeEach(async () => {
    db = createDb({ dialect: 'sqlite', filename: ':memory:' });
    await migrateToLatest(db);
    evaluator = createEmbeddedAuthz(db, authorizationModel());
    asked = 0;
    hold = undefined;
    clock = 1_000_000;
    const counted: AuthzService = {
      ...evaluator,
      check: async (user, relation, object) => {
        asked += 1;
        const answer = await evaluator.check(user, relation, object);
        await hold;
        return answer;
      },
    };
    authz = cachingDecisions(counted, { ttlMs: 1_000, now: () => clock });
  });
  afterEach(() => db.destroy());

  it('answers a repeated question from memory until the time-to-live has passed', async () => {
    await evaluator.write([executor]);
    expect([await mayCall(), await mayCall(), await mayCall()]).toEqual([true, true, true]);
    expect(asked).toBe(1);
    clock += 999;
    await mayCall();
    expect(asked).toBe(1);
    clock += 1;
    await mayCall();
    expect(asked).toBe(2);
  });

  it('keeps each question apart: another user, relation or object is asked afresh', async () => {
    await evaluator.write([executor]);
    expect(await mayCall()).toBe(true);
    expect(await authz.check('user:bob', executor.relation, executor.object)).toBe(false);
    // viewer follows from executor in the model: a different question, with its own answer.
    expect(await authz.check(executor.user, 'viewer', executor.object)).toBe(true);
    expect(await authz.check(executor.user, executor.relation, 'tool:chat')).toBe(false);
    expect(asked).toBe(4);
  });

  it('forgets every decision when a tuple is written, deleted or removed with its entity', async () => {
    expect(await mayCall()).toBe(false);
    await authz.write([executor]);
    expect(await mayCall()).toBe(true);
    await authz.delete([executor]);
    expect(await mayCall()).toBe(false);
    await authz.write([executor]);
    expect(await mayCall()).toBe(true);
    expect(await authz.removeAllFor(executor.user)).toBe(1);
    expect(await mayCall()).toBe(false);
    expect(asked).toBe(5);
  });

  it('does not keep an answer read while a tuple was changing', async () => {
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const before = mayCall(); // reads "no", then waits
    await authz.write([executor]);
    release();
    expect(await before).toBe(false);
    hold = undefined;
    expect(await mayCall()).toBe(true);
  });
});
