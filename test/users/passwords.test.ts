import { describe, expect, it } from 'vitest';
import { concurrencyLimit } from '../../src/modules/users/passwords.js';

describe('concurrency limit (password hashing slots)', () => {
  it('runs at most its size at once, the rest in arrival order, and frees a slot when work fails', async () => {
    const limit = concurrencyLimit(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const gates: (() => void)[] = [];
    const task = (n: number, fail = false) =>
      limit(async () => {
        started.push(n);
        running += 1;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => gates.push(resolve));
        running -= 1;
        if (fail) throw new Error(`task ${n} failed`);
        return n;
      });
    const results = [task(1, true), task(2), task(3), task(4), task(5)].map((p) =>
      p.then(
        (v) => v,
        (e: Error) => e.message,
      ),
    );
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(started).toEqual([1, 2]);
    while (gates.length > 0) {
      gates.shift()!();
      await settle();
    }
    expect(await Promise.all(results)).toEqual(['task 1 failed', 2, 3, 4, 5]);
    expect(started).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    // The slots are free again.
    expect(
      await Promise.all([
        limit(() => Promise.resolve('x')),
        limit(() => Promise.resolve('y')),
        limit(() => Promise.resolve('z')),
      ]),
    ).toEqual(['x', 'y', 'z']);
  });
});
