import { EventEmitter } from 'node:events';
import { setImmediate as tick } from 'node:timers/promises';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/http/metrics.js';
import { type RequestScope, currentRequest, requestContext } from '../../src/http/request-context.js';
import { installProcessGuards } from '../../src/process-guards.js';
import { captureLogger } from '../helpers/app.js';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * The last-resort policy for errors no caller handled (installed by `serve` on the process; here on an emitter of
 * the test's own): what goes on, what stops the service, and that each is logged with its request and counted.
 */
function guarded(scope: () => RequestScope | undefined = () => undefined) {
  const target = new EventEmitter();
  const { logger, lines } = captureLogger();
  const metrics = createMetrics();
  const stops: unknown[] = [];
  installProcessGuards({
    logger,
    metrics,
    currentRequest: scope,
    stop: (error) => stops.push(error),
    target: target as unknown as NodeJS.Process,
  });
  const counted = async () =>
    Object.fromEntries(
      (await metrics.unhandledErrors.get()).values.map((v) => [`${v.labels.kind} ${v.labels.outcome}`, v.value]),
    );
  return { target, lines, stops, counted };
}

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

describe('process guards', () => {
  it('logs an unhandled rejection with the request it happened in, counts it, and goes on', async () => {
    const request = { id: 'req-1', listener: 'main', method: 'POST', url: '/api/v1/api-keys' };
    const { target, lines, stops, counted } = guarded(() => request);
    target.emit('unhandledRejection', new Error('nobody awaited me'), Promise.resolve());
    await tick();
    expect(stops).toEqual([]);
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatchObject({
      level: 50,
      msg: 'unhandled promise rejection; continuing',
      err: { message: 'nobody awaited me' },
      req: request,
    });
    expect(await counted()).toEqual({ 'rejection continued': 1 });
  });

  it('goes on after a connection lost with no listener (a socket reset, a dropped database connection)', async () => {
    const { target, lines, stops, counted } = guarded();
    target.emit('uncaughtException', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    target.emit('uncaughtException', new Error('Connection terminated unexpectedly'));
    await tick();
    expect(stops).toEqual([]);
    expect(lines().map((l) => l.msg)).toEqual(Array(2).fill('uncaught connection error; continuing'));
    expect(await counted()).toEqual({ 'exception continued': 2 });
  });

  it('stops the service once, as fatal, after any other uncaught exception', async () => {
    const { target, lines, stops, counted } = guarded();
    const bug = new TypeError("Cannot read properties of undefined (reading 'id')");
    target.emit('uncaughtException', bug);
    target.emit('uncaughtException', new RangeError('and another while stopping'));
    await tick();
    expect(stops).toEqual([bug]);
    expect(lines()[0]).toMatchObject({ level: 60, msg: 'uncaught exception; shutting down' });
    expect(await counted()).toEqual({ 'exception stopped': 2 });
  });

  it('knows the request whose code is running, across awaits, and none outside a request', async () => {
    const { logger } = captureLogger();
    const app = express();
    app.use(requestContext(logger, 'main'));
    const seen: (RequestScope | undefined)[] = [];
    app.get('/widgets/:id', async (_req, res) => {
      await tick();
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push(currentRequest());
      res.json({ ok: true });
    });
    const served = await serveOnLoopback(app);
    closing.push(served.close);
    const res = await fetch(`${served.url}/widgets/secret-id`, { headers: { 'X-Request-Id': 'abc-123' } });
    expect(res.status).toBe(200);
    expect(seen).toEqual([{ id: 'abc-123', listener: 'main', method: 'GET', url: '/widgets/secret-id' }]);
    expect(currentRequest()).toBeUndefined();
  });
});
