import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ForbiddenError } from '../../src/errors.js';
import { createListenerApp } from '../../src/http/listener.js';
import { createMetrics } from '../../src/http/metrics.js';
import { metricsRoutes } from '../../src/http/metrics.routes.js';
import { type RouteGroup, defineRoute } from '../../src/http/route.js';
import { StaticRoutes } from '../../src/http/static-routes.js';
import { Lifecycle } from '../../src/lifecycle.js';
import { captureLogger } from '../helpers/app.js';
import { serveOnLoopback } from '../helpers/http.js';

/*
 * Routes without parameters are served from a table looked up by exact method and path, ahead of express's walk
 * through the routers; what they answer, and which route answers, must be what express would have chosen.
 */

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const answer = (name: string) => () => ({ route: name });

/** Two groups whose routes overlap: in each pair, the route registered first is the one express runs. */
const groups: RouteGroup[] = [
  {
    prefix: '/things',
    area: 'envelope',
    routes: [
      defineRoute({
        method: 'get',
        path: '/:thing_id',
        operationId: 'thing',
        summary: 'A thing by id',
        access: 'public',
        request: { params: z.object({ thing_id: z.string() }) },
        responses: { 200: { description: 'ok' } },
        handler: ({ params }) => ({ route: 'by id', id: params.thing_id }),
      }),
      // Registered after `/:thing_id`, which express tries first for GET /things/mine.
      defineRoute({
        method: 'get',
        path: '/mine',
        operationId: 'mine',
        summary: 'Shadowed',
        access: 'public',
        responses: { 200: { description: 'ok' } },
        handler: answer('mine'),
      }),
      // Another method: `/:thing_id` above does not shadow it.
      defineRoute({
        method: 'post',
        path: '/mine',
        operationId: 'post-mine',
        summary: 'Not shadowed',
        access: 'public',
        responses: { 201: { description: 'ok' } },
        handler: answer('post mine'),
      }),
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'things',
        summary: 'All things',
        access: 'public',
        responses: { 200: { description: 'ok' } },
        handler: answer('all'),
      }),
      defineRoute({
        method: 'get',
        path: '/refused/now',
        operationId: 'refused',
        summary: 'Always 403',
        access: 'public',
        responses: { 200: { description: 'never' } },
        handler: () => {
          throw new ForbiddenError('Not yours', { code: 'FORBIDDEN' });
        },
      }),
      defineRoute({
        method: 'get',
        path: '/private/list',
        operationId: 'private',
        summary: 'Needs a caller',
        responses: { 200: { description: 'ok' } },
        handler: answer('private'),
      }),
    ],
  },
  {
    prefix: '',
    area: 'envelope',
    routes: [
      // The first group's `/:thing_id` matches this path too, whatever its case.
      defineRoute({
        method: 'get',
        path: '/THINGS/late',
        operationId: 'late',
        summary: 'Shadowed across groups',
        access: 'public',
        responses: { 200: { description: 'ok' } },
        handler: answer('late'),
      }),
    ],
  },
];

async function start(lifecycle = new Lifecycle()) {
  const metrics = createMetrics();
  const app = createListenerApp({
    name: 'main',
    logger: captureLogger().logger,
    metrics,
    lifecycle,
    bodyLimitBytes: 1024,
    alwaysOn: [metricsRoutes(metrics)],
    groups,
    authenticate: () => (_req, _res, next) => next(new ForbiddenError('No caller here', { code: 'FORBIDDEN' })),
  });
  const served = await serveOnLoopback(app);
  close = served.close;
  return { url: served.url, metrics: () => fetch(`${served.url}/metrics`).then((res) => res.text()) };
}

describe('routes without parameters', () => {
  it('are answered by the route express would choose, in its order of registration', async () => {
    const lifecycle = new Lifecycle();
    lifecycle.markRunning();
    const { url } = await start(lifecycle);
    const get = async (path: string, init?: RequestInit) => {
      const res = await fetch(`${url}${path}`, init);
      return { status: res.status, body: await res.json() };
    };
    expect(await get('/things/mine')).toEqual({ status: 200, body: { route: 'by id', id: 'mine' } });
    expect(await get('/things/mine', { method: 'POST' })).toEqual({ status: 201, body: { route: 'post mine' } });
    expect(await get('/things/late')).toEqual({ status: 200, body: { route: 'by id', id: 'late' } });
    expect(await get('/things')).toEqual({ status: 200, body: { route: 'all' } });
    // What the table does not hold exactly, express still serves.
    expect(await get('/things/')).toEqual({ status: 200, body: { route: 'all' } });
    expect(await get('/Things')).toEqual({ status: 200, body: { route: 'all' } });
    expect((await fetch(`${url}/things`, { method: 'HEAD' })).status).toBe(200);
  });

  it('keep their refusals, authentication and start-up gate, and their route label', async () => {
    const lifecycle = new Lifecycle();
    const { url, metrics } = await start(lifecycle);
    const starting = await fetch(`${url}/things`);
    expect(starting.status).toBe(503);
    expect(starting.headers.get('retry-after')).toBe('1');
    lifecycle.markRunning();

    const refused = await fetch(`${url}/things/refused/now`);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: 'forbidden', message: 'Not yours' });
    const unauthenticated = await fetch(`${url}/things/private/list`);
    expect(unauthenticated.status).toBe(403);
    expect(await unauthenticated.json()).toMatchObject({ message: 'No caller here' });

    expect((await fetch(`${url}/things`)).status).toBe(200);
    const text = await metrics();
    expect(text).toMatch(/http_requests_total\{listener="main",method="GET",route="\/things",status_code="200"\} 1/);
    expect(text).toMatch(/route="\/things\/refused\/now",status_code="403"\} 1/);
    expect(text).toMatch(/route="\/things\/private\/list",status_code="403"\} 1/);
  });
});

describe('StaticRoutes', () => {
  it('holds a route only when no earlier route of its method could match its path', () => {
    const table = new StaticRoutes();
    const none = [() => undefined];
    table.add('get', '/a/:id', none);
    table.add('get', '/a/b', none); // shadowed by /a/:id
    table.add('get', '/a/b/c', none);
    table.add('post', '/a/b', none);
    table.add('get', '/files/*rest', none);
    table.add('get', '/files/x/y', none); // shadowed by the wildcard
    table.add('get', '/opt{/:x}', none);
    table.add('get', '/opt', none); // shadowed by the optional part
    table.add('get', '/a/b/c', none); // the first of two equal routes is the one express runs
    table.add('get', '/z', none);
    expect(table.size).toBe(3);
  });
});
