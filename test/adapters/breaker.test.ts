import { describe, expect, it } from 'vitest';
import { CircuitBreaker, CircuitOpenError } from '../../src/adapters/breaker/breaker.js';
import { captureLogger } from '../helpers/app.js';
import { TestClock } from '../helpers/auth.js';

class Unreachable extends Error {}

function setUp() {
  const clock = new TestClock();
  const { logger, lines } = captureLogger();
  const breaker = new CircuitBreaker({
    dependency: 'database',
    now: () => clock.now().getTime(),
    logger,
    isOutage: (error) => error instanceof Unreachable,
    cooldownMs: 1_000,
    retryAfterSeconds: 7,
  });
  let calls = 0;
  const call = (outcome: 'ok' | 'down' | 'refused') => () => {
    calls++;
    if (outcome === 'down') return Promise.reject(new Unreachable('connect ECONNREFUSED'));
    if (outcome === 'refused') return Promise.reject(new TypeError('bad query'));
    return Promise.resolve('answer');
  };
  return { clock, breaker, call, calls: () => calls, messages: () => lines().map((l) => l.msg) };
}

describe('CircuitBreaker', () => {
  it('passes answers and non-outage failures through, and stays closed', async () => {
    const { breaker, call, calls } = setUp();
    expect(await breaker.run(call('ok'))).toBe('answer');
    await expect(breaker.run(call('refused'))).rejects.toThrow(TypeError);
    expect(await breaker.run(call('ok'))).toBe('answer');
    expect(calls()).toBe(3);
    expect(breaker.isOpen).toBe(false);
    expect(breaker.since).toBeUndefined();
  });

  it('opens on an outage: calls fail at once with a 503 naming the dependency, without reaching it', async () => {
    const { breaker, call, calls, clock } = setUp();
    await expect(breaker.run(call('down'))).rejects.toThrow(Unreachable);
    expect(breaker.since).toBe(clock.ms);
    clock.advance(999);
    const refused = await breaker.run(call('ok')).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CircuitOpenError);
    expect(refused).toMatchObject({
      status: 503,
      message: 'The database is unavailable; retry shortly',
      headers: { 'Retry-After': '7' },
    });
    expect(calls()).toBe(1);
  });

  it('lets calls through after the cool-down: a failure opens it again, a success closes it', async () => {
    const { breaker, call, calls, clock, messages } = setUp();
    const outageBegan = clock.ms;
    await expect(breaker.run(call('down'))).rejects.toThrow(Unreachable);
    clock.advance(1_000);
    await expect(breaker.run(call('down'))).rejects.toThrow(Unreachable);
    expect(breaker.since).toBe(outageBegan); // the same outage, still going
    clock.advance(500);
    await expect(breaker.run(call('ok'))).rejects.toThrow(CircuitOpenError);
    clock.advance(500);
    expect(await breaker.run(call('ok'))).toBe('answer');
    expect(breaker.since).toBeUndefined();
    expect(breaker.isOpen).toBe(false);
    expect(calls()).toBe(3);
    expect(messages()).toEqual(['database unreachable: failing fast', 'database reachable again']);
  });
});
