import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServiceUnavailableError } from '../../src/errors.js';
import { Lifecycle } from '../../src/lifecycle.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, accessToken, call, createUser, fetchApp } from '../helpers/auth.js';

// What a chat turn gets when the service stops: the lifecycle's two moments (stopping, then the drain's deadline),
// and the chat-turn service's decision on them, seen through the real app (SQLite, the offline model, paced so that
// an answer is still streaming when the test stops the service). The whole process is in
// test/e2e/sigterm-streams.test.ts.

const closing = closeAfterEach();
afterEach(() => vi.useRealTimers());

/** A hundred one-letter words: the offline model quotes them back one by one. */
const LONG = Array.from({ length: 100 }, () => 'a').join(' ');

async function setUp() {
  const app = closing(await startTestApp({ ADMIN_PASSWORD, OFFLINE_LLM_WORD_DELAY_MS: '50' }));
  const alice = await createUser(app, 'alice');
  return { app, alice, token: await accessToken(app, 'alice') };
}

describe('the lifecycle at shutdown', () => {
  it('gives work in flight the drain less a wind-down, then aborts the deadline with the stopping error', () => {
    vi.useFakeTimers();
    const lifecycle = new Lifecycle();
    lifecycle.markRunning();
    lifecycle.beginStop({ drainMs: 5_000 });
    expect(lifecycle.stopping.aborted).toBe(true);
    expect(lifecycle.deadline.aborted).toBe(false);
    // A fifth of the drain, at most a second, is kept for the work to say why it ends.
    vi.advanceTimersByTime(3_999);
    expect(lifecycle.deadline.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(lifecycle.deadline.aborted).toBe(true);
    expect(lifecycle.deadline.reason).toBeInstanceOf(ServiceUnavailableError);
    expect(lifecycle.deadline.reason).toMatchObject({ status: 503, code: 'SERVICE_STOPPING' });

    const short = new Lifecycle();
    short.beginStop({ drainMs: 1_000 });
    vi.advanceTimersByTime(799);
    expect(short.deadline.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(short.deadline.aborted).toBe(true);

    // Without a drain there is no time to give: the deadline is now.
    const now = new Lifecycle();
    now.beginStop();
    expect(now.deadline.aborted).toBe(true);
  });
});

describe('a chat turn at shutdown', () => {
  it('still running at the deadline, a JSON turn answers 503 service_stopping and records nothing', async () => {
    const { app, alice, token } = await setUp();
    const db = app.infrastructure.db.kysely;
    const answered = call(app, 'POST', '/mcp/message', { token, body: { query: LONG, use_tools: false } });
    // The turn has begun (its conversation exists) and its answer is streaming from the paced model.
    for (let i = 0; i < 500; i++) {
      if ((await db.selectFrom('conversations').select('id').execute()).length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Shutdown with no drain left: the deadline is now.
    app.lifecycle.beginStop();
    const res = await answered;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.body).toEqual({
      error: {
        code: 'service_stopping',
        message: expect.any(String) as unknown,
        trace_id: expect.any(String) as unknown,
      },
    });
    // A stopped turn is a cancelled one: its conversation holds none of it.
    const conversations = await db
      .selectFrom('conversations')
      .select(['id', 'message_count'])
      .where('owner', '=', `user:${alice.id}`)
      .execute();
    expect(conversations).toEqual([{ id: expect.any(String) as unknown, message_count: 0 }]);
    expect(await db.selectFrom('messages').select('id').execute()).toEqual([]);
  });

  it('leaves no listener on the deadline once its turns have ended, streamed or answered whole', async () => {
    const app = closing(await startTestApp({ ADMIN_PASSWORD }));
    await createUser(app, 'alice');
    const token = await accessToken(app, 'alice');
    for (let turn = 0; turn < 3; turn++) {
      expect((await call(app, 'POST', '/mcp/message', { token, body: { query: 'Hi', use_tools: false } })).status).toBe(
        200,
      );
      const streamed = await fetchApp(app, 'POST', '/mcp/message', {
        token,
        body: { query: 'Hi', use_tools: false, stream: true },
      });
      expect(streamed.status).toBe(200);
      expect(await streamed.text()).toContain('message_complete');
    }
    expect(getEventListeners(app.lifecycle.deadline, 'abort')).toHaveLength(0);
  });

  it('once the service is stopping, a new turn is refused on every chat route, before any stream starts', async () => {
    const { app, token } = await setUp();
    const session = await call(app, 'POST', '/api/playground/sessions', { token, body: {}, listener: 'playground' });
    expect(session.status).toBe(201);
    app.lifecycle.beginStop({ drainMs: 60_000 });

    const mcp = await call(app, 'POST', '/mcp/message', { token, body: { query: 'hi', stream: true } });
    expect(mcp.status).toBe(503);
    expect(mcp.body).toMatchObject({ error: { code: 'service_stopping' } });
    const message = await call(app, 'POST', '/message', {
      token,
      body: { query: 'hi' },
      headers: { Accept: 'application/x-ndjson' },
    });
    expect(message.status).toBe(503);
    expect(message.body).toMatchObject({ error: { code: 'service_stopping' } });
    const playground = await call(app, 'POST', '/api/playground/chat', {
      token,
      listener: 'playground',
      body: { session_id: session.body.session_id, message: 'hi', stream: true },
      headers: { Accept: 'text/event-stream' },
    });
    expect(playground.status).toBe(503);
    expect(playground.body).toMatchObject({ error: 'service_unavailable', code: 'SERVICE_STOPPING' });
    // Nothing of the refused turns was kept: no conversation, no playground message.
    expect(await app.infrastructure.db.kysely.selectFrom('conversations').select('id').execute()).toEqual([]);
    const detail = await call(app, 'GET', `/api/playground/sessions/${String(session.body.session_id)}`, {
      token,
      listener: 'playground',
    });
    expect(detail.body.messages).toEqual([]);
  });
});
