import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach } from '../helpers/app.js';
import { type SignedIn, startTestClient } from '../helpers/client.js';
import { postMcp } from '../helpers/mcp.js';

/**
 * Events of a streamable-HTTP session (`/mcp`) are replayed with `Last-Event-ID` to that session of that caller
 * only. The SDK names every session's standalone stream `_GET_stream`, so a store that did not tell sessions apart
 * replayed one user's log messages to anyone who named a guessable event id.
 */

const closing = closeAfterEach();
const PROTOCOL = '2025-06-18';

/**
 * A fetch for the official client that watches its GET streams: the event ids they carry, the `Last-Event-ID`
 * each was opened with and what it was answered; `cut` ends the open one as a dropped connection would, and
 * `hold` keeps the next GET waiting until it is let go.
 */
function watchGetStreams() {
  const ids: string[] = [];
  const opened: { lastEventId: string | null; status: number }[] = [];
  const waiting: (() => void)[] = [];
  let cancel: (() => Promise<void>) | undefined;
  let gate: Promise<void> | undefined;
  const watched: typeof fetch = async (input, init) => {
    if (init?.method !== 'GET') return fetch(input, init);
    const lastEventId = new Headers(init.headers).get('last-event-id');
    await gate;
    const res = await fetch(input, init);
    opened.push({ lastEventId, status: res.status });
    waiting.splice(0).forEach((wake) => wake());
    if (!res.ok || !res.body) return res;
    const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
    cancel = () => reader.cancel();
    let text = '';
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        text += new TextDecoder().decode(value);
        ids.splice(0, ids.length, ...[...text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!));
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  return {
    fetch: watched,
    ids,
    opened,
    /** Resolves once `count` GET streams have been answered. */
    async answered(count: number): Promise<void> {
      while (opened.length < count) await new Promise<void>((wake) => waiting.push(wake));
    },
    cut: () => cancel?.(),
    hold(): () => void {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

/** Alice's official client, its log messages as they arrive, and a watch on its GET streams. */
async function connectWatched(app: App, user: SignedIn) {
  const watch = watchGetStreams();
  const client = new Client({ name: 'watched', version: '1.0.0' });
  const logs: { logger?: string; data: unknown }[] = [];
  const waiting: (() => void)[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
    waiting.splice(0).forEach((wake) => wake());
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
    requestInit: { headers: user.credentials },
    fetch: watch.fetch,
    // A reconnection that comes while the server still holds the dropped stream is refused (409) and tried again.
    reconnectionOptions: {
      initialReconnectionDelay: 10,
      maxReconnectionDelay: 200,
      reconnectionDelayGrowFactor: 2,
      maxRetries: 50,
    },
  });
  await client.connect(transport);
  closing({ close: () => client.close() });
  await watch.answered(1);
  return {
    client,
    watch,
    logs,
    sessionId: transport.sessionId!,
    async logCount(count: number): Promise<void> {
      while (logs.length < count) await new Promise<void>((wake) => waiting.push(wake));
    },
  };
}

/** Opens a session with a raw initialize request; its id. */
async function openSession(app: App, user: SignedIn): Promise<string> {
  const res = await postMcp(app, user.token, {
    method: 'initialize',
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  expect(res.status).toBe(200);
  await res.text();
  return res.headers.get('mcp-session-id')!;
}

/** `GET /mcp` on a session with `Last-Event-ID`: the status and what came with it (the first chunk of a stream). */
async function resume(app: App, user: SignedIn, sessionId: string, lastEventId: string) {
  const res = await fetch(`${app.url('main')}/mcp`, {
    headers: {
      ...user.credentials,
      Accept: 'text/event-stream',
      'Mcp-Session-Id': sessionId,
      'Mcp-Protocol-Version': PROTOCOL,
      'Last-Event-ID': lastEventId,
    },
  });
  if (!res.headers.get('content-type')?.includes('text/event-stream'))
    return { status: res.status, body: await res.text() };
  // A replay is written before the stream is answered: whatever it would leak comes with the first chunk.
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body!.getReader();
  const first = await reader.read();
  await reader.cancel();
  return { status: res.status, body: new TextDecoder().decode(first.value) };
}

const UNKNOWN_EVENT = { jsonrpc: '2.0', error: { code: -32000, message: 'Invalid event ID format' }, id: null };
const NO_SESSION = { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null };

describe('streamable HTTP events belong to their session and caller', () => {
  it('replays none of alice’s events to bob, whichever event id he names, and alice resumes her own', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const bob = await as('bob');
    const mine = await connectWatched(app, alice);
    await mine.client.setLoggingLevel('debug');
    await mine.client.callTool({ name: 'search_web', arguments: { query: 'alice private topic' } });
    await mine.logCount(1);
    expect(mine.logs[0]).toMatchObject({ logger: 'search_web', data: { tool: 'search_web' } });
    const aliceIds = [...mine.watch.ids];
    expect(aliceIds).toHaveLength(1);

    const bobSession = await openSession(app, bob);
    const [token] = aliceIds[0]!.split('.');
    const guesses = ['_GET_stream_0', '_GET_stream_1', '_GET_stream_2', ...aliceIds, `${token}.0`, `${token}.2`, 'x'];
    for (const guess of guesses) {
      const reply = await resume(app, bob, bobSession, guess);
      expect(reply.body, guess).not.toContain('search_web');
      expect(reply.status, guess).toBe(400);
      expect(JSON.parse(reply.body), guess).toEqual(UNKNOWN_EVENT);
    }
    // Unguessable: 128 random bits, not a counter on a stream name every session shares.
    expect(aliceIds[0]).toMatch(/^[A-Za-z0-9_-]{22}\.[0-9a-z]+$/);
    // Nor through her session, which is hers alone.
    for (const guess of aliceIds) {
      const reply = await resume(app, bob, mine.sessionId, guess);
      expect(reply.status).toBe(404);
      expect(JSON.parse(reply.body)).toEqual(NO_SESSION);
    }

    // Her connection drops; what she misses meanwhile is replayed when her client resumes with Last-Event-ID.
    const release = mine.watch.hold();
    await mine.watch.cut();
    await mine.client.callTool({ name: 'search_web', arguments: { query: 'while away' } });
    expect(mine.logs).toHaveLength(1);
    release();
    await mine.logCount(2);
    expect(mine.logs[1]).toMatchObject({ logger: 'search_web', data: { tool: 'search_web' } });
    const resumed = mine.watch.opened.slice(1);
    expect(resumed.every((open) => open.lastEventId === aliceIds[0])).toBe(true);
    expect(resumed.at(-1)!.status).toBe(200);
  });

  it('refuses alice’s session id to bob on POST, GET and DELETE, and her session carries on', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const bob = await as('bob');
    const mine = await connectWatched(app, alice);
    const headers = {
      ...bob.credentials,
      Accept: 'application/json, text/event-stream',
      'Content-Type': 'application/json',
      'Mcp-Session-Id': mine.sessionId,
      'Mcp-Protocol-Version': PROTOCOL,
    };
    const url = `${app.url('main')}/mcp`;
    const replies = [
      await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      }),
      await fetch(url, { headers }),
      await fetch(url, { method: 'DELETE', headers }),
    ];
    for (const reply of replies) {
      expect(reply.status).toBe(404);
      expect(await reply.json()).toEqual(NO_SESSION);
    }
    // Bob's DELETE ended nothing: the session still answers alice.
    expect((await mine.client.listTools()).tools.length).toBeGreaterThan(0);
    expect(app.wires.streamable.size).toBe(1);
  });

  it('forgets a session’s events when the session ends or is reaped', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const streamable = app.wires.streamable;
    const busySession = async () => {
      const session = await openSession(app, alice);
      for (const message of [
        { method: 'logging/setLevel', params: { level: 'debug' } },
        { method: 'tools/call', params: { name: 'search_web', arguments: { query: 'kept for a resume' } } },
      ])
        expect((await (await postMcp(app, alice.token, message, session)).text()).length).toBeGreaterThan(0);
      return session;
    };

    const ended = await busySession();
    expect(streamable.storedEvents).toBeGreaterThan(0);
    const res = await fetch(`${app.url('main')}/mcp`, {
      method: 'DELETE',
      headers: { ...alice.credentials, 'Mcp-Session-Id': ended },
    });
    expect(res.status).toBe(200);
    expect(streamable.storedEvents).toBe(0);

    await busySession();
    expect(streamable.storedEvents).toBeGreaterThan(0);
    expect(await streamable.reapIdle(Date.now() + 24 * 3_600_000)).toBe(1);
    expect(streamable.storedEvents).toBe(0);
  });

  it('replays nothing in stateless mode, where there is no stream to resume', async () => {
    const { app, as } = closing(await startTestClient({ MCP_SESSION_MODE: 'stateless' }));
    const alice = await as('alice');
    const reply = await resume(app, alice, 'any', '_GET_stream_0');
    expect(reply.status).toBe(405);
    expect(reply.body).not.toContain('_GET_stream');
  });
});
