import { describe, expect, it } from 'vitest';
import { createMemoryBroadcast } from '../../src/adapters/broadcast/memory.js';
import { RecentReads, SharedForgetting, kindAndId } from '../../src/ports/recent-reads.js';

/** A read that answers when told to, to forget things while it is under way. */
function pendingRead(value: string | undefined) {
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  return { read: async () => (await answered, value), answer };
}

describe('recent reads', () => {
  it('answers a read for ttl milliseconds, then reads again', async () => {
    const reads = new RecentReads<string>(1_000, 10);
    expect(await reads.read('a', 0, () => Promise.resolve('first'))).toBe('first');
    expect(reads.get('a', 999)).toBe('first');
    expect(reads.get('a', 1_000)).toBeUndefined();
    expect(await reads.read('a', 1_000, () => Promise.resolve(undefined))).toBeUndefined();
    expect(reads.get('a', 1_001)).toBeUndefined(); // nothing found is not remembered
  });

  it('answers through the remembered value while it lasts, and reads once it has expired', async () => {
    const reads = new RecentReads<string>(1_000, 10);
    let count = 0;
    const read = () => Promise.resolve(`read ${++count}`);
    expect(await reads.through('a', 0, read)).toBe('read 1');
    expect(await reads.through('a', 999, read)).toBe('read 1');
    expect(await reads.through('a', 1_000, read)).toBe('read 2');
    expect(count).toBe(2);
  });

  it('remembers nothing with a ttl of 0', async () => {
    const reads = new RecentReads<string>(0, 10);
    expect(await reads.read('a', 0, () => Promise.resolve('read'))).toBe('read');
    expect(reads.get('a', 0)).toBeUndefined();
  });

  it('does not remember a read that was under way when something was forgotten', async () => {
    const reads = new RecentReads<string>(1_000, 10);
    const slow = pendingRead('stale');
    const reading = reads.read('a', 0, slow.read);
    reads.forget((value) => value === 'anything');
    slow.answer();
    expect(await reading).toBe('stale');
    expect(reads.get('a', 1)).toBeUndefined();
  });

  it('keeps a read under way when an entry is merely dropped', async () => {
    const reads = new RecentReads<string>(1_000, 10);
    const slow = pendingRead('kept');
    const reading = reads.read('a', 0, slow.read);
    reads.drop('b');
    slow.answer();
    await reading;
    expect(reads.get('a', 1)).toBe('kept');
  });

  it('revises a remembered value in place, and does not remember a read under way across the revision', async () => {
    const reads = new RecentReads<{ count: number }>(1_000, 10);
    await reads.read('a', 0, () => Promise.resolve({ count: 1 }));
    reads.revise('a', ({ count }) => ({ count: count + 2 }));
    reads.revise('b', () => ({ count: 99 })); // nothing remembered: nothing made up
    expect(reads.get('a', 1)).toEqual({ count: 3 });
    expect(reads.get('b', 1)).toBeUndefined();
    const slow = pendingRead('unused');
    const stale = new RecentReads<string>(1_000, 10);
    const reading = stale.read('c', 0, slow.read);
    stale.revise('c', (value) => value);
    slow.answer();
    await reading;
    expect(stale.get('c', 1)).toBeUndefined();
  });

  it('forgets by key or by value, and lets the oldest entry go beyond its limit', async () => {
    const reads = new RecentReads<{ owner: string }>(1_000, 2);
    await reads.read('a', 0, () => Promise.resolve({ owner: 'alice' }));
    await reads.read('b', 0, () => Promise.resolve({ owner: 'bob' }));
    await reads.read('c', 0, () => Promise.resolve({ owner: 'alice' }));
    expect(reads.get('a', 1)).toBeUndefined();
    expect(reads.get('b', 1)).toEqual({ owner: 'bob' });
    reads.forget(({ owner }) => owner === 'alice');
    expect(reads.get('c', 1)).toBeUndefined();
    reads.forget('b');
    expect(reads.get('b', 1)).toBeUndefined();
  });
});

/** Two instances' forgetting on one channel, and what each heard to forget. */
function twoInstances() {
  const broadcast = createMemoryBroadcast();
  const heard = { a: [] as string[], b: [] as string[] };
  const unsent = (err: unknown) => {
    throw err;
  };
  const a = new SharedForgetting<`key:${string}`>('changes', (m) => heard.a.push(m), unsent);
  const b = new SharedForgetting<`key:${string}`>('changes', (m) => heard.b.push(m), unsent);
  return { broadcast, heard, a, b };
}

describe('shared forgetting', () => {
  it('splits a message into its kind and the id after the first colon', () => {
    expect(kindAndId('session:abc')).toEqual({ kind: 'session', id: 'abc' });
    expect(kindAndId('owner:user:42')).toEqual({ kind: 'owner', id: 'user:42' });
  });

  it('forgets here at once and, once shared, on every instance on the channel; stopped, it hears nothing more', async () => {
    const { broadcast, heard, a, b } = twoInstances();
    await a.tell('key:1'); // not shared yet: this instance only
    expect(heard).toEqual({ a: ['key:1'], b: [] });

    const stopA = a.share(broadcast);
    const stopB = b.share(broadcast);
    await a.tell('key:2');
    await Promise.resolve(); // delivered after the publisher's turn
    expect(heard.b).toEqual(['key:2']);
    expect(heard.a).toEqual(['key:1', 'key:2', 'key:2']); // here at once, and again as the broadcast arrives

    stopB();
    await a.tell('key:3');
    await Promise.resolve();
    expect(heard.b).toEqual(['key:2']);
    stopA();
  });

  it('tells only the other instances what this one keeps up to date itself', async () => {
    const { broadcast, heard, a, b } = twoInstances();
    a.share(broadcast);
    b.share(broadcast);
    await a.tellOthers('key:1');
    await b.tellOthers('key:2');
    await Promise.resolve();
    expect(heard).toEqual({ a: ['key:2'], b: ['key:1'] });
  });
});
