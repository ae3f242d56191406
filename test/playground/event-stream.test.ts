import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { openEventStream } from '../../transports/event-stream.js';
import { serveOnLoopback } from '../helpers/http.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

describe('a server-sent events stream', () => {
  it('puts each event on the wire as it is written, not on the next tick', async () => {
    const corked: number[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const app = express();
    app.get('/events', (_req, res) => {
      const stream = openEventStream(res);
      stream.send('token', { content: 'Hel' });
      corked.push(res.socket?.writableCorked ?? -1);
      stream.send('token', { content: 'lo' });
      corked.push(res.socket?.writableCorked ?? -1);
      // The rest of a turn goes on without coming up for air until the client has the events.
      void released.then(() => {
        stream.send('end', {});
        stream.end();
      });
    });
    const server = await serveOnLoopback(app);
    closers.push(server.close);

    const res = await fetch(`${server.url}/events`);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    let text = '';
    while (!text.includes('data: {"content":"lo"}\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toBe('event: token\ndata: {"content":"Hel"}\n\nevent: token\ndata: {"content":"lo"}\n\n');
    expect(corked).toEqual([0, 0]);
    release();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.endsWith('event: end\ndata: {}\n\n')).toBe(true);
  });

  it('sends its headers before any event once the loop comes round, and with the first event when that is sooner', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const heads: string[] = [];
    const app = express();
    app.get('/quiet', (_req, res) => {
      const stream = openEventStream(res);
      void released.then(() => {
        stream.send('token', { content: 'late' });
        stream.end();
      });
    });
    app.get('/eager', (_req, res) => {
      const stream = openEventStream(res);
      stream.send('token', { content: 'at once' });
      heads.push(typeof (res as unknown as { _header?: unknown })._header);
      stream.end();
    });
    const server = await serveOnLoopback(app);
    closers.push(server.close);

    // The quiet stream's client knows it is open while nothing has been sent yet.
    const quiet = await fetch(`${server.url}/quiet`);
    expect(quiet.status).toBe(200);
    expect(quiet.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(quiet.headers.get('cache-control')).toBe('no-cache');
    release();
    expect(await quiet.text()).toBe('event: token\ndata: {"content":"late"}\n\n');

    const eager = await fetch(`${server.url}/eager`);
    expect(eager.headers.get('x-accel-buffering')).toBe('no');
    expect(await eager.text()).toBe('event: token\ndata: {"content":"at once"}\n\n');
    expect(heads).toEqual(['string']);
  });
});
