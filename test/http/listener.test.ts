import { execFile } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ForbiddenError } from '../../src/errors.js';
import { HttpListener, createListenerApp } from '../../src/http/listener.js';
import { createMetrics } from '../../src/http/metrics.js';
import { metricsRoutes } from '../../src/http/metrics.routes.js';
import { type RouteGroup, defineRoute } from '../../src/http/route.js';
import { Lifecycle } from '../../src/lifecycle.js';
import { captureLogger } from '../helpers/app.js';
import { nodeArgsFor } from '../helpers/entry.js';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * The HTTP plumbing every listener shares, exercised through real HTTP with route groups in each error area
 * (the areas' own modules arrive later; the mechanism is what is under test here).
 */

const Widget = z.object({ name: z.string().min(1).max(10), size: z.number().int().positive().optional() });

function group(prefix: string, area: RouteGroup['area']): RouteGroup {
  return {
    prefix,
    area,
    routes: [
      defineRoute({
        method: 'post',
        path: '/widgets/:widget_id',
        operationId: `create-${area}`,
        summary: 'Echo a widget',
        tags: ['Test'],
        access: 'public',
        request: { params: z.object({ widget_id: z.string().regex(/^w\d+$/) }), body: Widget },
        responses: { 201: { description: 'Created' } },
        handler: ({ params, body }) => ({ id: params.widget_id, ...body }),
      }),
      defineRoute({
        method: 'get',
        path: '/forbidden',
        operationId: `forbidden-${area}`,
        summary: 'Always 403',
        tags: ['Test'],
        access: 'public',
        responses: { 200: { description: 'never' } },
        handler: () => {
          throw new ForbiddenError('Not yours', { code: 'FORBIDDEN' });
        },
      }),
      defineRoute({
        method: 'get',
        path: '/crash',
        operationId: `crash-${area}`,
        summary: 'Always 500',
        tags: ['Test'],
        access: 'public',
        responses: { 200: { description: 'never' } },
        handler: () => {
          throw new Error('database password is hunter2');
        },
      }),
    ],
  };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function start(options: { lifecycle?: Lifecycle; bodyLimitBytes?: number } = {}) {
  const lifecycle = options.lifecycle ?? new Lifecycle();
  if (!options.lifecycle) lifecycle.markRunning();
  const capture = captureLogger();
  const metrics = createMetrics();
  const app = createListenerApp({
    name: 'main',
    logger: capture.logger,
    metrics,
    lifecycle,
    bodyLimitBytes: options.bodyLimitBytes ?? 1024,
    alwaysOn: [metricsRoutes(metrics)],
    groups: [
      group('/api', 'envelope'),
      group('/mcp', 'mcp'),
      group('/scim/v2', 'scim'),
      group('/api/v1/users', 'data-subject'),
      group('/health', 'envelope'),
    ],
  });
  const served = await serveOnLoopback(app);
  close = served.close;
  return { url: served.url, logs: capture.lines };
}

/** A listener app for the given groups, of a service that has finished starting. */
function runningApp(groups: RouteGroup[]) {
  const lifecycle = new Lifecycle();
  lifecycle.markRunning();
  const app = createListenerApp({
    name: 'main',
    logger: captureLogger().logger,
    metrics: createMetrics(),
    lifecycle,
    bodyLimitBytes: 1024,
    groups,
  });
  return app;
}

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

describe('listener plumbing', () => {
  it('validates path and body and answers with the declared status', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/api/widgets/w1`, json({ name: 'gear', size: 3 }));
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: 'w1', name: 'gear', size: 3 });
  });

  it('reports every invalid field of the request in the envelope', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/api/widgets/nope`, json({ name: '', size: -1 }));
    expect(res.status).toBe(400);
    // The path is checked first: its problem is reported before the body is looked at.
    const body = (await res.json()) as { error: string; code: string; details: { loc: unknown[] }[] };
    expect(body).toMatchObject({ error: 'validation_error', code: 'VALIDATION_ERROR' });
    expect(body.details.map((d) => d.loc)).toEqual([['path', 'widget_id']]);

    const second = await fetch(`${url}/api/widgets/w2`, json({ name: '', size: -1, extra: true }));
    const details = ((await second.json()) as { details: { loc: unknown[] }[] }).details.map((d) => d.loc);
    expect(details).toEqual([
      ['body', 'name'],
      ['body', 'size'],
    ]);
  });

  it('answers malformed JSON with 400 in each area’s shape', async () => {
    const { url } = await start();
    const envelope = await fetch(`${url}/api/widgets/w1`, json('{"name":'));
    expect(envelope.status).toBe(400);
    expect(await envelope.json()).toMatchObject({ error: 'validation_error', code: 'MALFORMED_JSON' });

    const mcp = await fetch(`${url}/mcp/widgets/w1`, json('{"name":'));
    expect(mcp.status).toBe(400);
    expect(await mcp.json()).toEqual({ error: { code: 'invalid_request', message: 'Request body is not valid JSON' } });

    const scim = await fetch(
      `${url}/scim/v2/widgets/w1`,
      json('{"name":', { 'Content-Type': 'application/scim+json' }),
    );
    expect(scim.status).toBe(400);
    expect(scim.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(await scim.json()).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: 400,
      detail: 'Request body is not valid JSON',
      scimType: 'invalidSyntax',
    });
  });

  it('renders field errors of data-subject routes as 422 {detail:[{loc,msg,type}]}', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/api/v1/users/widgets/w1`, json({ name: 'far too long a name' }));
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    expect(body.detail).toEqual([{ loc: ['body', 'name'], msg: expect.any(String) as unknown, type: 'too_big' }]);
  });

  it('refuses a body over the limit with 413 and other media types with 415', async () => {
    const { url } = await start({ bodyLimitBytes: 100 });
    const big = await fetch(`${url}/api/widgets/w1`, json({ name: 'x'.repeat(200) }));
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: 'payload_too_large', code: 'PAYLOAD_TOO_LARGE' });

    const text = await fetch(`${url}/api/widgets/w1`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'name=x',
    });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ error: 'unsupported_media_type', code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('answers unknown routes with 404 in the shape of the area they fall in', async () => {
    const { url } = await start();
    expect(await (await fetch(`${url}/nowhere`)).json()).toMatchObject({ error: 'not_found', code: 'ROUTE_NOT_FOUND' });
    expect(await (await fetch(`${url}/scim/v2/Nothing`)).json()).toMatchObject({ status: 404, scimType: 'notFound' });
    expect(await (await fetch(`${url}/api/v1/users/nothing`)).json()).toEqual({
      detail: 'No route for GET /api/v1/users/nothing',
    });
  });

  it('renders thrown errors in the area’s shape', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/mcp/forbidden`);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: { code: 'permission_denied', message: 'Not yours' } });
  });

  it('turns an unexpected error into a 500 with the request id as trace id, logged with its cause', async () => {
    const { url, logs } = await start();
    const res = await fetch(`${url}/api/crash`, { headers: { 'X-Request-Id': 'req-crash-1' } });
    expect(res.status).toBe(500);
    expect(res.headers.get('x-request-id')).toBe('req-crash-1');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'internal_error', message: 'Internal server error', trace_id: 'req-crash-1' });
    expect(JSON.stringify(body)).not.toContain('hunter2');
    const failure = logs().find((line) => line.msg === 'request failed');
    expect(failure).toMatchObject({ req: { id: 'req-crash-1' }, err: { message: 'database password is hunter2' } });
  });

  it('gives every request an id, echoed in the response and on its log lines', async () => {
    const { url, logs } = await start();
    const generated = await fetch(`${url}/nowhere`);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // An id that could smuggle text into logs is replaced, not echoed.
    const hostile = await fetch(`${url}/nowhere`, { headers: { 'X-Request-Id': 'a b\u00e9<script>' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const ids = logs()
      .filter((line) => line.msg === 'request completed')
      .map((line) => (line.req as { id: string }).id);
    expect(ids).toEqual([generated.headers.get('x-request-id'), hostile.headers.get('x-request-id')]);
  });

  it('logs probes at debug and other requests at info, each under its whole route pattern', async () => {
    const { url, logs } = await start();
    await fetch(`${url}/health/widgets/w1`, json({ name: 'probe' }));
    await fetch(`${url}/api/widgets/w2?secret=1`, json({ name: 'call' }));
    const lines = logs().filter((line) => line.msg === 'request completed');
    expect(lines.map(({ level, url: logged, res }) => ({ level, url: logged, res }))).toEqual([
      { level: 20, url: '/health/widgets/:widget_id', res: { statusCode: 201 } },
      { level: 30, url: '/api/widgets/:widget_id', res: { statusCode: 201 } },
    ]);
    expect(lines[1]).toMatchObject({ listener: 'main', req: { method: 'POST' } });
    expect(lines[1]!.responseTime).toEqual(expect.any(Number));
  });

  it('counts requests by route pattern and times them', async () => {
    const { url } = await start();
    await fetch(`${url}/api/widgets/w1`, json({ name: 'a' }));
    await fetch(`${url}/api/widgets/w2`, json({ name: 'b' }));
    await fetch(`${url}/api/widgets/w3`, json({ name: '' }));
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain(
      'http_requests_total{listener="main",method="POST",route="/api/widgets/:widget_id",status_code="201"} 2',
    );
    expect(text).toContain(
      'http_requests_total{listener="main",method="POST",route="/api/widgets/:widget_id",status_code="400"} 1',
    );
    expect(text).toMatch(
      /http_request_duration_seconds_count\{listener="main",method="POST",route="\/api\/widgets\/:widget_id",status_code="201"\} 2/,
    );
    expect(text).toContain('process_cpu_seconds_total');
  });

  it('refuses an unsupported X-API-Version with 400 naming the supported ones, and accepts v1 spelt any way', async () => {
    const { url } = await start();
    for (const version of ['v1', '1', '1.0', 'V1']) {
      const ok = await fetch(`${url}/api/widgets/w1`, json({ name: 'a' }, { 'X-API-Version': version }));
      expect(ok.status).toBe(201);
      expect(ok.headers.get('x-api-version')).toBe('v1');
    }
    const res = await fetch(`${url}/api/widgets/w1`, json({ name: 'a' }, { 'X-API-Version': 'v2' }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: 'validation_error',
      code: 'UNSUPPORTED_API_VERSION',
      message: 'Unsupported API version "v2" in X-API-Version; supported versions: v1',
    });
  });

  it('answers gated routes with 503 and Retry-After until start-up finishes', async () => {
    const lifecycle = new Lifecycle();
    const { url } = await start({ lifecycle });
    const early = await fetch(`${url}/api/widgets/w1`, json({ name: 'a' }));
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('1');
    expect(await early.json()).toMatchObject({ error: 'service_unavailable', code: 'SERVICE_STARTING' });
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    lifecycle.markRunning();
    expect((await fetch(`${url}/api/widgets/w1`, json({ name: 'a' }))).status).toBe(201);
  });

  it('keeps an idle connection open longer than a load balancer would, and tells the client how long', async () => {
    const app = runningApp([group('/api', 'envelope')]);
    const listener = new HttpListener('main', app);
    await listener.listen('127.0.0.1', 0);
    try {
      const res = await fetch(`${listener.url}/api/widgets/w1`, json({ name: 'gear' }));
      expect(res.status).toBe(201);
      // Clients keep a connection for less than the server says: a proxy with a 60 s idle timeout closes first.
      expect(res.headers.get('keep-alive')).toBe('timeout=65');
    } finally {
      await listener.close(1_000);
    }
  });

  it('makes requests and responses with the app’s prototypes, so that express does not change them per request', async () => {
    const app = runningApp([group('/api', 'envelope')]);
    const listener = new HttpListener('main', app);
    // What Node made, before express has seen it: express would otherwise set these prototypes on each request,
    // and V8 gives every object whose prototype changes a hidden class of its own.
    const born: [unknown, unknown][] = [];
    listener.server.prependListener('request', (req, res) =>
      born.push([Object.getPrototypeOf(req), Object.getPrototypeOf(res)]),
    );
    await listener.listen('127.0.0.1', 0);
    try {
      const created = await fetch(`${listener.url}/api/widgets/w1`, json({ name: 'gear' }));
      expect(created.status).toBe(201);
      expect(await created.json()).toEqual({ id: 'w1', name: 'gear' });
      const refused = await fetch(`${listener.url}/api/forbidden`);
      expect(refused.status).toBe(403);
      expect(born).toHaveLength(2);
      for (const [request, response] of born) {
        expect(request).toBe(app.request);
        expect(response).toBe(app.response);
      }
    } finally {
      await listener.close(1_000);
    }
  });

  it('gives every request one hidden class, and every response another, with fast properties', async () => {
    // V8 can tell only from inside: the fixture holds four requests open and asks it (--allow-natives-syntax).
    const fixture = join(import.meta.dirname, '../fixtures/hidden-classes.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', ...nodeArgsFor(fixture)]);
    expect(JSON.parse(stdout)).toEqual({
      held: 4,
      requestsShareClass: true,
      responsesShareClass: true,
      fastRequests: true,
      fastResponses: true,
    });
  });

  it('lets an in-flight request finish on close, then closes its connection', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const app = runningApp([
      {
        prefix: '/slow',
        area: 'envelope',
        routes: [
          defineRoute({
            method: 'get',
            path: '/',
            operationId: 'slow',
            summary: 'Answers when released',
            tags: ['Test'],
            access: 'public',
            responses: { 200: { description: 'Released' } },
            handler: async () => {
              await held;
              return { released: true };
            },
          }),
        ],
      },
    ]);
    const listener = new HttpListener('main', app);
    await listener.listen('127.0.0.1', 0);
    const pending = fetch(`${listener.url}/slow`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closing = listener.close(10_000);
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ released: true });
    expect(res.headers.get('connection')).toBe('close');
    await closing;
    expect(listener.listening).toBe(false);
  });

  it('closes a stream’s kept-alive connection when the stream ends during the drain, not when the drain runs out', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const app = runningApp([
      {
        prefix: '/stream',
        area: 'envelope',
        routes: [
          defineRoute({
            method: 'get',
            path: '/',
            operationId: 'stream',
            summary: 'Streams until released',
            tags: ['Test'],
            access: 'public',
            responses: { 200: { description: 'The stream' } },
            handler: async ({ res }) => {
              // Headers out before the drain: they say nothing of closing the connection.
              res.status(200).type('text/plain');
              res.flushHeaders();
              res.write('first\n');
              await held;
              res.end('last\n');
              return undefined;
            },
          }),
        ],
      },
    ]);
    const listener = new HttpListener('main', app);
    // Kept-alive connections outlive the test unless closed (as behind a load balancer, whose idle timeout the
    // service's must exceed).
    listener.server.keepAliveTimeout = 600_000;
    await listener.listen('127.0.0.1', 0);
    const agent = new Agent({ keepAlive: true });
    const { socket, body } = await new Promise<{ socket: Socket; body: Promise<string> }>((resolve, reject) => {
      const req = request(`${listener.url}/stream`, { agent }, (res) => {
        expect(res.headers.connection).toBe('keep-alive');
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        const body = new Promise<string>((done) => res.once('end', () => done(text)));
        res.once('data', () => resolve({ socket: req.socket!, body }));
      });
      req.once('error', reject);
      req.end();
    });
    const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // A drain far longer than the test may take, with no linger for idle connections.
    const closing = listener.close(600_000, 0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    expect(await body).toBe('first\nlast\n');
    // The stream's connection is closed by the service once the stream has ended, and with it the drain is over.
    await socketClosed;
    await closing;
    expect(listener.listening).toBe(false);
    agent.destroy();
  });
});
