import { request } from 'node:http';
import express, { type Response } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createListenerApp } from '../../src/http/listener.js';
import { createMetrics } from '../../src/http/metrics.js';
import { type RouteGroup, Reply, defineRoute } from '../../src/http/route.js';
import { Lifecycle } from '../../src/lifecycle.js';
import { captureLogger } from '../helpers/app.js';
import { serveOnLoopback } from '../helpers/http.js';

/*
 * The routes write their JSON answers themselves; what reaches the client must be what express's `res.json` sends
 * for the same result: status, media type, length and bytes, a HEAD without its body, and a response with its own
 * validators or media type answered by express itself (a 304 to a matching If-None-Match).
 */

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const LARGE = { items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, note: 'naïve — ✓' })) };

/** Each case: how a route answers, and how the same answer is written with express's `res.json`. */
const answers: Record<string, { route: (res: Response) => unknown; express: (res: Response) => void }> = {
  object: { route: () => ({ a: 1, text: 'é… ✓' }), express: (res) => res.json({ a: 1, text: 'é… ✓' }) },
  large: { route: () => LARGE, express: (res) => res.json(LARGE) },
  array: { route: () => [1, 'two', null], express: (res) => res.json([1, 'two', null]) },
  string: { route: () => 'just text', express: (res) => res.json('just text') },
  reply: {
    route: () => new Reply(202, { accepted: true }, { 'X-Thing': 'yes' }),
    express: (res) => res.status(202).set({ 'X-Thing': 'yes' }).json({ accepted: true }),
  },
  etag: {
    route: (res) => {
      res.setHeader('ETag', '"v1"');
      return { version: 1 };
    },
    express: (res) => res.set('ETag', '"v1"').json({ version: 1 }),
  },
  scim: {
    route: (res) => {
      res.setHeader('Content-Type', 'application/scim+json');
      return { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'] };
    },
    express: (res) =>
      res.type('application/scim+json').json({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'] }),
  },
};

const group: RouteGroup = {
  prefix: '/j',
  area: 'envelope',
  routes: Object.entries(answers).map(([name, { route }]) =>
    defineRoute({
      method: 'get',
      path: `/${name}`,
      operationId: name,
      summary: name,
      access: 'public',
      responses: { 200: { description: 'ok' } },
      handler: ({ res }) => route(res),
    }),
  ),
};

async function serve(app: express.Express): Promise<string> {
  const served = await serveOnLoopback(app);
  closers.push(served.close);
  return served.url;
}

async function services() {
  const lifecycle = new Lifecycle();
  lifecycle.markRunning();
  const ours = createListenerApp({
    name: 'main',
    logger: captureLogger().logger,
    metrics: createMetrics(),
    lifecycle,
    bodyLimitBytes: 1024,
    groups: [group],
  });
  const reference = express();
  reference.set('etag', false);
  for (const [name, { express: answer }] of Object.entries(answers))
    reference.get(`/j/${name}`, (_req, res) => answer(res));
  return { ours: await serve(ours), reference: await serve(reference) };
}

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

/** A raw answer: its status, the headers a JSON answer is made of, and its bytes as they came. */
function fetchRaw(url: string, method: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const pick = (name: string) => res.headers[name] as string | undefined;
        resolve({
          status: res.statusCode ?? 0,
          headers: {
            'content-type': pick('content-type'),
            'content-length': pick('content-length'),
            etag: pick('etag'),
            'x-thing': pick('x-thing'),
            'transfer-encoding': pick('transfer-encoding'),
          },
          body: Buffer.concat(chunks).toString('latin1'),
        });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('JSON answers of the routes', () => {
  it('are what express would send for the same result', async () => {
    const { ours, reference } = await services();
    for (const name of Object.keys(answers)) {
      for (const method of ['GET', 'HEAD']) {
        const expected = await fetchRaw(`${reference}/j/${name}`, method);
        expect({ name, method, ...(await fetchRaw(`${ours}/j/${name}`, method)) }).toEqual({
          name,
          method,
          ...expected,
        });
      }
    }
    // The bytes are the JSON itself, in UTF-8, counted in bytes rather than characters.
    const object = await fetchRaw(`${ours}/j/object`, 'GET');
    expect(Buffer.from(object.body, 'latin1').toString('utf8')).toBe(JSON.stringify({ a: 1, text: 'é… ✓' }));
    expect(object.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify({ a: 1, text: 'é… ✓' }))));
  });

  it('answer a matching If-None-Match with 304 where the route set its validator', async () => {
    const { ours } = await services();
    const fresh = await fetchRaw(`${ours}/j/etag`, 'GET', { 'If-None-Match': '"v1"' });
    expect(fresh.status).toBe(304);
    expect(fresh.body).toBe('');
    const stale = await fetchRaw(`${ours}/j/etag`, 'GET', { 'If-None-Match': '"v0"' });
    expect(stale).toMatchObject({ status: 200, body: '{"version":1}' });
  });
});
