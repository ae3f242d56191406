import { Agent, request } from 'node:http';
import { setImmediate as tick } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { type RequestScope, currentRequest, requestContext } from '../../src/http/request-context.js';
import { captureLogger } from '../helpers/app.js';
import { serveOnLoopback } from '../helpers/http.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** GET `path` on a kept-alive connection of `agent`; answers the body once it has come whole. */
function get(agent: Agent, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

describe('request scope', () => {
  it('lets go of a finished request while its connection stays open', async () => {
    const { logger } = captureLogger();
    const app = express();
    app.use(requestContext(logger, 'main'));
    let handled: WeakRef<object> | undefined;
    app.get('/things', (req, res) => {
      handled = new WeakRef(req);
      res.json({ ok: true });
    });
    const served = await serveOnLoopback(app);
    closing.push(served.close);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    closing.push(() => Promise.resolve(agent.destroy()));

    expect(await get(agent, `${served.url}/things`)).toBe('{"ok":true}');
    // The connection is open and idle: the server armed its keep-alive timer as the response finished, in the
    // request's scope.
    expect(Object.values(agent.freeSockets).flat()).toHaveLength(1);
    for (let i = 0; i < 3 && handled?.deref() !== undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      collectGarbage();
    }
    expect(handled?.deref()).toBeUndefined();
  });

  it('still tells which request work made in it belongs to once the response has gone', async () => {
    const { logger } = captureLogger();
    const app = express();
    app.use(requestContext(logger, 'main'));
    const seen = new Promise<RequestScope | undefined>((resolve) => {
      app.get('/later/:id', (_req, res) => {
        setTimeout(() => resolve(currentRequest()), 20);
        res.json({ ok: true });
      });
    });
    const served = await serveOnLoopback(app);
    closing.push(served.close);

    const res = await fetch(`${served.url}/later/secret-id`, { headers: { 'X-Request-Id': 'late-1' } });
    expect(await res.json()).toEqual({ ok: true });
    expect(await seen).toEqual({ id: 'late-1', listener: 'main', method: 'GET', url: '/later/secret-id' });
    await tick();
    expect(currentRequest()).toBeUndefined();
  });
});
