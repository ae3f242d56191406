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
  /** Renewals the cache put off, run when a test says so. */
  let deferred: (() => void)[];
  const runDeferred = async () => {
    for (const work of deferred.splice(0)) work();
    await new Promise((resolve) => setImmediate(resolve));
  };

  const executor = { user: 'user:ann', relation: 'executor', object: 'tool:search_web' };
  const mayCall = () => authz.check(executor.user, executor.relation, executor.object);

  /** The permission granted and asked, then asked again `lateMs` later: past half its life, a renewal is put off. */
  const grantedThenReadLate = async (lateMs: number) => {
    await evaluator.write([executor]);
    expect(await mayCall()).toBe(true);
    clock += lateMs;
    expect(await mayCall()).toBe(true);
  };

  beforeEach(async () => {
    db = createDb({ dialect: 'sqlite', filename: ':memory:' });
    await migrateToLatest(db);
    evaluator = createEmbeddedAuthz(db, authorizationModel());
    asked = 0;
    hold = undefined;
    clock = 1_000_000;
    deferred = [];
    const counted: AuthzService = {
      ...evaluator,
      check: async (user, relation, object) => {
        asked += 1;
        const answer = await evaluator.check(user, relation, object);
        await hold;
        return answer;
      },
    };
    authz = cachingDecisions(counted, { ttlMs: 1_000, now: () => clock, defer: (work) => deferred.push(work) });
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

  it('asks again in the background a decision read in the second half of its life, off the reading path', async () => {
    await evaluator.write([executor]);
    expect(await mayCall()).toBe(true);
    clock += 499;
    expect(await mayCall()).toBe(true);
    expect(deferred).toHaveLength(0); // still young
    clock += 1;
    expect(await mayCall()).toBe(true);
    expect(await mayCall()).toBe(true);
    expect(asked).toBe(1); // answered from memory, one renewal put off
    expect(deferred).toHaveLength(1);
    // Another instance revokes the permission (straight in the evaluator: this cache hears nothing of it).
    await evaluator.delete([executor]);
    await runDeferred();
    expect(asked).toBe(2);
    // Past the first answer's time, the renewed one (asked at +500) stands without a walk on the path.
    clock += 600;
    expect(await mayCall()).toBe(false);
    expect(asked).toBe(2);
  });

  it('never answers from a decision older than its time-to-live, renewed or not', async () => {
    await grantedThenReadLate(700); // the renewal put off does not run
    await evaluator.delete([executor]);
    clock += 300;
    expect(await mayCall()).toBe(false);
    expect(asked).toBe(2);
  });

  it('lets a renewal that fails go: the decision lives out its time, then is asked on the path', async () => {
    await grantedThenReadLate(600);
    const failing = Promise.reject(new Error('the authorization service is away'));
    failing.catch(() => undefined);
    hold = failing;
    await runDeferred();
    expect(asked).toBe(2);
    hold = undefined;
    expect(await mayCall()).toBe(true); // still the first answer, within its time
    expect(asked).toBe(2);
    clock += 400;
    expect(await mayCall()).toBe(true);
    expect(asked).toBe(3);
  });

  it('does not keep a renewal that was under way when a tuple changed', async () => {
    await grantedThenReadLate(600);
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    for (const work of deferred.splice(0)) work(); // the renewal reads "yes", then waits
    await authz.delete([executor]);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    hold = undefined;
    expect(await mayCall()).toBe(false);
  });
});
