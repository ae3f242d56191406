import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, accessToken, call, cookiePair, createUser } from '../helpers/auth.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type Json, eventually, newSession, playground } from './helpers.js';

const apps: App[] = [];
const fakes: FakeOpenAi[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await Promise.all(apps.splice(0).map((app) => app.close()));
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function setUp(env: Record<string, string> = {}) {
  const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', ...env });
  apps.push(app);
  const alice = await createUser(app, 'alice');
  await createUser(app, 'bob');
  const token = await accessToken(app, 'alice');
  return { app, alice, token, bob: await accessToken(app, 'bob'), session: await newSession(app, token) };
}

/** The service pointed at a FAKE OpenAI-compatible API (no hosted model can run here) that streams slowly. */
async function setUpWithSlowModel(env: Record<string, string> = {}) {
  const fake = await startFakeOpenAi(['gpt-test']);
  fakes.push(fake);
  fake.chunkDelayMs = 40;
  const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
  fake.replies.push({ text: words });
  const context = await setUp({
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: fake.url,
    LLM_MODEL: 'gpt-test',
    LLM_API_KEY: 'sk-fake',
    ...env,
  });
  return { ...context, fake };
}

/** A client socket whose messages are read in order, waiting for each. */
class Client {
  readonly received: Json[] = [];
  closed: { code: number; reason: string } | undefined;
  readonly #waiters: (() => void)[] = [];

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      this.received.push(JSON.parse(data.toString()) as Json);
      this.#wake();
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.#wake();
    });
  }

  #wake() {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  send(message: unknown) {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The next message of this type after those already taken (or fails after a while). */
  #taken = 0;
  async next(type?: string, ms = 5_000): Promise<Json> {
    const until = Date.now() + ms;
    for (;;) {
      while (this.#taken < this.received.length) {
        const message = this.received[this.#taken++]!;
        if (!type || message.type === type) return message;
      }
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) before a ${type ?? 'message'}`);
      if (Date.now() > until) throw new Error(`no ${type ?? 'message'} in time: ${JSON.stringify(this.received)}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  async closedWith(ms = 5_000): Promise<{ code: number; reason: string }> {
    await eventually(() => this.closed !== undefined, ms);
    return this.closed!;
  }
}

async function connect(app: App, sessionId: string, headers: Record<string, string> = {}): Promise<Client> {
  const socket = new WebSocket(`${app.url('playground').replace('http', 'ws')}/ws/playground/${sessionId}`, {
    headers,
  });
  sockets.push(socket);
  const client = new Client(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return client;
}

async function authenticated(app: App, sessionId: string, token: string): Promise<Client> {
  const client = await connect(app, sessionId);
  client.send({ type: 'auth', token });
  await client.next('auth_success');
  return client;
}

describe('the playground WebSocket', () => {
  it('authenticates with its first message, answers ping, and streams a chat turn', async () => {
    const { app, alice, token, session } = await setUp();
    const client = await connect(app, session);
    client.send({ type: 'auth', token });
    expect(await client.next()).toEqual({ type: 'auth_success', user_id: alice.id });

    client.send({ type: 'ping' });
    expect(await client.next()).toEqual({ type: 'pong' });

    client.send({ type: 'chat', message: 'search for websocket auth' });
    expect(await client.next()).toEqual({
      type: 'tool_call',
      id: 'call_1',
      name: 'search_web',
      args: { query: 'websocket auth' },
    });
    expect(await client.next()).toMatchObject({ type: 'tool_result', id: 'call_1', is_error: false });
    const tokens: string[] = [];
    let message = await client.next();
    while (message.type === 'token') {
      tokens.push(message.content as string);
      message = await client.next();
    }
    expect(message).toMatchObject({
      type: 'end',
      cancelled: false,
      usage: { total_tokens: expect.any(Number) as unknown },
    });
    expect(tokens.length).toBeGreaterThan(3);

    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    expect((detail.body.messages as Json[])[1]).toMatchObject({ id: message.message_id, content: tokens.join('') });
  });

  it('answers bad messages with an error and keeps a healthy socket open', async () => {
    const { app, token, session } = await setUp({ PLAYGROUND_MAX_MESSAGE_CHARS: '20' });
    const client = await authenticated(app, session, token);
    const cases: [unknown, string][] = [
      ['{not json', 'MALFORMED_JSON'],
      [{ type: 'dance' }, 'BAD_REQUEST'],
      [[1, 2, 3], 'BAD_REQUEST'],
      [{ type: 'chat' }, 'VALIDATION_ERROR'],
      [{ type: 'chat', message: '   ' }, 'VALIDATION_ERROR'],
      [{ type: 'cancel' }, 'BAD_REQUEST'],
      [{ type: 'auth', token }, 'BAD_REQUEST'],
      [{ type: 'chat', message: 'x'.repeat(2_000) }, 'PAYLOAD_TOO_LARGE'],
      [{ type: 'chat', message: 'x'.repeat(21) }, 'VALIDATION_ERROR'],
    ];
    for (const [message, code] of cases) {
      client.send(message);
      expect(await client.next(), JSON.stringify(message).slice(0, 40)).toMatchObject({
        type: 'error',
        code,
        message: expect.any(String) as unknown,
      });
    }
    client.send({ type: 'ping' });
    expect(await client.next()).toEqual({ type: 'pong' });
    expect(client.closed).toBeUndefined();
    // None of them started a turn.
    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    expect(detail.body.messages).toEqual([]);
  });

  it('refuses a bad token, a first message that is not auth, and silence, and closes', async () => {
    const { app, session } = await setUp({ PLAYGROUND_WS_AUTH_TIMEOUT_MS: '300' });
    const bad = await connect(app, session);
    bad.send({ type: 'auth', token: 'eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl' });
    expect(await bad.next()).toMatchObject({ type: 'auth_error', message: expect.any(String) as unknown });
    expect((await bad.closedWith()).code).toBe(4401);

    const chatty = await connect(app, session);
    chatty.send({ type: 'chat', message: 'hi' });
    expect(await chatty.next()).toMatchObject({ type: 'auth_error' });
    expect((await chatty.closedWith()).code).toBe(4401);

    const silent = await connect(app, session);
    expect(await silent.next('auth_error', 2_000)).toMatchObject({ message: 'No auth message received in time' });
    expect((await silent.closedWith()).code).toBe(4401);
  });

  it("finds another user's session, or none, missing: an error, and the socket closes", async () => {
    const { app, bob, session } = await setUp();
    for (const [id, token] of [
      [session, bob],
      ['no-such-session', bob],
    ] as const) {
      const client = await connect(app, id);
      client.send({ type: 'auth', token });
      expect(await client.next()).toMatchObject({ type: 'error', code: 'NOT_FOUND' });
      expect((await client.closedWith()).code).toBe(4404);
    }
  });

  it('accepts the session id of a session-mode login, with its session cookie, as its credential', async () => {
    const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', AUTH_MODE: 'session' });
    apps.push(app);
    const alice = await createUser(app, 'alice');
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const sessionId = login.body.session_id as string;
    const cookie = cookiePair(login.headers.get('set-cookie'));
    const created = await fetch(`${app.url('playground')}/api/playground/sessions`, {
      method: 'POST',
      headers: { Cookie: cookie, 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(created.status).toBe(201);
    const { session_id: id } = (await created.json()) as { session_id: string };
    // A browser sends its cookie with the upgrade; the session id names that session.
    const client = await connect(app, id, { Cookie: cookie });
    client.send({ type: 'auth', token: sessionId });
    expect(await client.next()).toEqual({ type: 'auth_success', user_id: alice.id });
    // The session id without its cookie is no credential.
    const bare = await connect(app, id);
    bare.send({ type: 'auth', token: sessionId });
    expect(await bare.next()).toMatchObject({ type: 'auth_error' });
    expect((await bare.closedWith()).code).toBe(4401);
  });

  it('stops the model when a running turn is cancelled, and keeps the partial answer marked cancelled', async () => {
    const { app, token, session, fake } = await setUpWithSlowModel();
    const client = await authenticated(app, session, token);
    client.send({ type: 'chat', message: 'Tell me a long story' });
    const first = await client.next('token');
    client.send({ type: 'chat', message: 'and another' });
    expect(await client.next('error')).toMatchObject({ code: 'CONFLICT' });
    client.send({ type: 'cancel' });
    const end = await client.next('end');
    expect(end).toMatchObject({ cancelled: true });
    // The model stub saw its stream abandoned: the model call was stopped, not left to run.
    await eventually(() => fake.abandoned === 1);

    const streamed = client.received.filter((m) => m.type === 'token').map((m) => m.content as string);
    expect(streamed[0]).toBe(first.content);
    expect(streamed.length).toBeLessThan(60);
    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    const messages = detail.body.messages as Json[];
    expect(messages.map((m) => [m.role, m.cancelled])).toEqual([
      ['user', false],
      ['assistant', true],
    ]);
    expect(messages[1]).toMatchObject({ id: end.message_id, content: streamed.join(''), error: null });

    const traces = await playground<Json[]>(app, 'GET', `/api/playground/observability/traces?session_id=${session}`, {
      token,
    });
    const root = traces.body.find((s) => s.parent_span_id === null)!;
    expect(root).toMatchObject({ status: 'error', attributes: { 'error.type': 'cancelled' } });
    const metrics = await playground(app, 'GET', `/api/playground/observability/metrics?session_id=${session}`, {
      token,
    });
    expect(metrics.body).toMatchObject({ message_count: 2, error_count: 0, tool_call_count: 0 });

    // The socket and the session go on: the next turn runs.
    fake.chunkDelayMs = 0;
    fake.replies.push({ text: 'Short answer.' });
    client.send({ type: 'chat', message: 'Briefly, then' });
    expect(await client.next('end')).toMatchObject({ cancelled: false });
    expect(fake.abandoned).toBe(1);
  });

  it('reports a failed model call as an error event, an error in the metrics and an ERROR log', async () => {
    const { app, token, session, fake } = await setUpWithSlowModel();
    fake.replies.length = 0;
    fake.failWith = 400;
    const client = await authenticated(app, session, token);
    client.send({ type: 'chat', message: 'Hello' });
    const error = await client.next('error');
    expect(error).toMatchObject({ code: expect.any(String) as unknown, message: expect.any(String) as unknown });
    const metrics = await playground(app, 'GET', `/api/playground/observability/metrics?session_id=${session}`, {
      token,
    });
    expect(metrics.body).toMatchObject({ message_count: 2, error_count: 1 });
    const logs = await playground<Json[]>(
      app,
      'GET',
      `/api/playground/observability/logs?session_id=${session}&level=ERROR`,
      { token },
    );
    expect(logs.body).toMatchObject([{ level: 'ERROR', message: 'turn failed' }]);
    const traces = await playground<Json[]>(app, 'GET', `/api/playground/observability/traces?session_id=${session}`, {
      token,
    });
    expect(traces.body.filter((s) => s.status === 'error').map((s) => s.operation)).toEqual([
      'invoke_agent agent-service',
      'chat gpt-test',
    ]);
    expect(client.closed).toBeUndefined();
  });

  it('limits messages per minute, answering the one over the limit with an error', async () => {
    const { app, token, session } = await setUp({ MCP_TOOL_CALLS_PER_MINUTE: '2' });
    const client = await authenticated(app, session, token);
    for (let i = 0; i < 2; i++) {
      client.send({ type: 'chat', message: `Hello ${i}` });
      expect(await client.next('end')).toMatchObject({ cancelled: false });
    }
    client.send({ type: 'chat', message: 'One too many' });
    expect(await client.next()).toMatchObject({ type: 'error', code: 'RATE_LIMIT' });
    client.send({ type: 'ping' });
    expect(await client.next()).toEqual({ type: 'pong' });
    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    expect(detail.body.messages).toHaveLength(4);
  });

  it("limits a user's concurrent turns across sessions and sockets", async () => {
    const { app, token, session, fake } = await setUpWithSlowModel({ MCP_MAX_CONCURRENT_STREAMS: '1' });
    const other = await newSession(app, token, 'Other');
    const first = await authenticated(app, session, token);
    const second = await authenticated(app, other, token);
    first.send({ type: 'chat', message: 'Long one' });
    await first.next('token');
    second.send({ type: 'chat', message: 'At the same time' });
    expect(await second.next('error')).toMatchObject({ code: 'RATE_LIMIT' });
    first.send({ type: 'cancel' });
    await first.next('end');
    // With the first turn over, the second socket may chat.
    fake.chunkDelayMs = 0;
    fake.replies.push({ text: 'Now it is your turn.' });
    second.send({ type: 'chat', message: 'Now?' });
    expect(await second.next('end')).toMatchObject({ cancelled: false });
  });

  it('closes cleanly when the service stops', async () => {
    const { app, token, session } = await setUp();
    const client = await authenticated(app, session, token);
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    expect((await client.closedWith()).code).toBe(1001);
  });
});

describe('a streamed chat whose client goes away', () => {
  it('stops the model and keeps the partial answer, marked cancelled', async () => {
    const { app, token, session, fake } = await setUpWithSlowModel();
    const controller = new AbortController();
    const res = await fetch(`${app.url('playground')}/api/playground/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ session_id: session, message: 'A long one', stream: true }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const { value } = await reader.read();
    const first = new TextDecoder().decode(value);
    expect(first).toContain('event: token');
    controller.abort();

    await eventually(() => fake.abandoned === 1);
    await eventually(async () => {
      const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
      return (detail.body.messages as Json[]).length === 2;
    });
    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    const answer = (detail.body.messages as Json[])[1]!;
    expect(answer).toMatchObject({ role: 'assistant', cancelled: true });
    expect((answer.content as string).startsWith('word0')).toBe(true);
    expect((answer.content as string).split(' ').length).toBeLessThan(60);
  });
});
