import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, call, createUser, servicePrincipalToken } from '../helpers/auth.js';
import { type Json, newSession, playground, streamChat } from './helpers.js';

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function setUp(env: Record<string, string> = {}) {
  const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', ...env });
  apps.push(app);
  const alice = await createUser(app, 'alice');
  await createUser(app, 'bob');
  return { app, alice, token: await accessToken(app, 'alice'), bob: await accessToken(app, 'bob') };
}

describe('playground sessions', () => {
  it('are created, listed with their message counts, renamed and deleted by their owner', async () => {
    const { app, alice, token } = await setUp();
    const created = await playground(app, 'POST', '/api/playground/sessions', {
      token,
      body: { name: 'Cookies', metadata: { purpose: 'demo' } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      session_id: expect.any(String) as unknown,
      name: 'Cookies',
      user_id: alice.id,
      created_at: expect.any(String) as unknown,
      updated_at: created.body.created_at,
      metadata: { purpose: 'demo' },
    });
    const id = created.body.session_id as string;
    await newSession(app, token, 'Second');

    const chat = await playground(app, 'POST', '/api/playground/chat', {
      token,
      body: { session_id: id, message: 'Hello there' },
    });
    expect(chat.status).toBe(200);

    const list = await playground<Json[]>(app, 'GET', '/api/playground/sessions', { token });
    expect(list.status).toBe(200);
    // Most recently active first: the session that was just chatted in.
    expect(list.body.map((s) => [s.name, s.message_count])).toEqual([
      ['Cookies', 2],
      ['Second', 0],
    ]);
    const page = await playground<Json[]>(app, 'GET', '/api/playground/sessions?limit=1&offset=1', { token });
    expect(page.body.map((s) => s.name)).toEqual(['Second']);

    const renamed = await playground(app, 'PATCH', `/api/playground/sessions/${id}`, { token, body: { name: 'Jar' } });
    expect(renamed).toMatchObject({
      status: 200,
      body: { session_id: id, name: 'Jar', metadata: { purpose: 'demo' } },
    });

    expect((await playground(app, 'DELETE', `/api/playground/sessions/${id}`, { token })).status).toBe(204);
    expect((await playground(app, 'GET', `/api/playground/sessions/${id}`, { token })).status).toBe(404);
    expect((await playground(app, 'DELETE', `/api/playground/sessions/${id}`, { token })).status).toBe(404);
    // Its transcript, spans and logs went with it.
    const { db } = app.infrastructure;
    for (const table of ['playground_messages', 'playground_spans', 'playground_logs'] as const) {
      const rows = await db.kysely.selectFrom(table).select('session_id').where('session_id', '=', id).execute();
      expect(rows, table).toEqual([]);
    }
  });

  it("are another user's or a service principal's to find as missing: 404, changing nothing", async () => {
    const { app, token, bob } = await setUp();
    const id = await newSession(app, token);
    const robot = await servicePrincipalToken(app, token, 'Robot');
    expect(robot).toBeTruthy();

    for (const other of [bob, robot]) {
      for (const [method, path, body] of [
        ['GET', `/api/playground/sessions/${id}`],
        ['PATCH', `/api/playground/sessions/${id}`, { name: 'mine now' }],
        ['DELETE', `/api/playground/sessions/${id}`],
        ['POST', '/api/playground/chat', { session_id: id, message: 'hi' }],
        ['GET', `/api/playground/observability/traces?session_id=${id}`],
        ['GET', `/api/playground/observability/logs?session_id=${id}`],
        ['GET', `/api/playground/observability/metrics?session_id=${id}`],
      ] as const) {
        const res = await playground(app, method, path, { token: other, ...(body && { body }) });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body).toMatchObject({ error: 'not_found', code: 'NOT_FOUND' });
      }
    }
    expect((await playground<Json[]>(app, 'GET', '/api/playground/sessions', { token: bob })).body).toEqual([]);
    // A service principal has no sessions of its own.
    const refused = await playground(app, 'POST', '/api/playground/sessions', { token: robot, body: {} });
    expect(refused).toMatchObject({ status: 403, body: { code: 'PLAYGROUND_PEOPLE_ONLY' } });
    const mine = await playground(app, 'GET', `/api/playground/sessions/${id}`, { token });
    expect(mine).toMatchObject({ status: 200, body: { name: 'Trying it out', messages: [] } });
  });

  it('need a valid credential, and refuse bad input with a 4xx in the envelope shape', async () => {
    const { app, token } = await setUp({ PLAYGROUND_MAX_MESSAGE_CHARS: '50' });
    const id = await newSession(app, token);
    expect((await playground(app, 'GET', '/api/playground/sessions')).status).toBe(401);
    expect((await playground(app, 'GET', '/api/playground/sessions', { token: 'not-a-token' })).status).toBe(401);
    const cases: [string, unknown, number][] = [
      ['no session id', { message: 'hi' }, 400],
      ['an empty message', { session_id: id, message: '' }, 400],
      ['a message over the limit', { session_id: id, message: 'x'.repeat(51) }, 400],
      ['a missing session', { session_id: 'nope', message: 'hi' }, 404],
      ['a non-boolean stream', { session_id: id, message: 'hi', stream: 'yes' }, 400],
    ];
    for (const [what, body, status] of cases) {
      const res = await playground(app, 'POST', '/api/playground/chat', { token, body });
      expect(res.status, what).toBe(status);
      expect(res.body, what).toMatchObject({
        error: expect.any(String) as unknown,
        message: expect.any(String) as unknown,
      });
    }
    const badLevel = await playground(app, 'GET', `/api/playground/observability/logs?session_id=${id}&level=LOUD`, {
      token,
    });
    expect(badLevel.status).toBe(400);
    // Nothing was stored by any of them.
    expect((await playground(app, 'GET', `/api/playground/sessions/${id}`, { token })).body.messages).toEqual([]);
  });

  it('tell the web UI how to sign in before anyone has', async () => {
    const { app } = await setUp({ AUTH_MODE: 'session' });
    const res = await playground(app, 'GET', '/api/playground/config');
    expect(res).toMatchObject({
      status: 200,
      body: { auth_mode: 'session', sso: { enabled: false }, llm_provider: 'offline', model: 'offline' },
    });
    // The sign-in routes answer on the playground listener too (the UI's CSP allows only its own origin).
    const login = await playground(app, 'POST', '/auth/login', { body: { username: 'alice', password: 'nope' } });
    expect(login.status).toBe(401);
  });
});

describe('POST /api/playground/chat', () => {
  it('answers with the Chat response and keeps the turn, its tool calls and its usage', async () => {
    const { app, token } = await setUp();
    const id = await newSession(app, token);
    const res = await playground(app, 'POST', '/api/playground/chat', {
      token,
      body: { session_id: id, message: 'Please search for session cookies' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      message_id: expect.any(String) as unknown,
      role: 'assistant',
      content: expect.stringContaining('Offline model:') as unknown,
      timestamp: expect.any(String) as unknown,
      tool_calls: [
        {
          id: 'call_1',
          name: 'search_web',
          args: { query: 'session cookies' },
          result: expect.any(String) as unknown,
          is_error: false,
        },
      ],
      usage: {
        prompt_tokens: expect.any(Number) as unknown,
        completion_tokens: expect.any(Number) as unknown,
        total_tokens: expect.any(Number) as unknown,
      },
      cancelled: false,
    });
    const usage = res.body.usage as Json;
    expect(usage.total_tokens).toBe((usage.prompt_tokens as number) + (usage.completion_tokens as number));

    const detail = await playground(app, 'GET', `/api/playground/sessions/${id}`, { token });
    const messages = detail.body.messages as Json[];
    expect(messages.map((m) => [m.role, m.cancelled])).toEqual([
      ['user', false],
      ['assistant', false],
    ]);
    expect(messages[0]!.content).toBe('Please search for session cookies');
    expect(messages[1]).toMatchObject({ id: res.body.message_id, content: res.body.content, usage });
    expect(messages[1]!.tool_calls).toEqual(res.body.tool_calls);
    expect(detail.body).toMatchObject({
      model: 'offline',
      total_tokens: usage.total_tokens,
      metadata: { model: 'offline', total_tokens: usage.total_tokens },
    });
  });

  it('streams token, tool_call, tool_result and end events, and keeps what it streamed', async () => {
    const { app, token } = await setUp();
    const id = await newSession(app, token);
    const { status, headers, events } = await streamChat(app, token, id, 'search for refresh token rotation');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const kinds = events.map((e) => e.event);
    expect(kinds.slice(0, 2)).toEqual(['tool_call', 'tool_result']);
    expect(kinds.at(-1)).toBe('end');
    expect(kinds.slice(2, -1).every((k) => k === 'token')).toBe(true);
    expect(events[0]!.data).toEqual({ id: 'call_1', name: 'search_web', args: { query: 'refresh token rotation' } });
    expect(events[1]!.data).toMatchObject({ id: 'call_1', name: 'search_web', is_error: false });
    const end = events.at(-1)!.data;
    expect(end).toMatchObject({ cancelled: false, usage: { total_tokens: expect.any(Number) as unknown } });

    const streamed = events
      .filter((e) => e.event === 'token')
      .map((e) => e.data.content)
      .join('');
    const detail = await playground(app, 'GET', `/api/playground/sessions/${id}`, { token });
    const answer = (detail.body.messages as Json[])[1]!;
    expect(answer).toMatchObject({ id: end.message_id, content: streamed, cancelled: false, usage: end.usage });
  });

  it('continues the conversation across turns, and after a restart of the service', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'playground-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'agent.db')}` };
    const first = await setUp(env);
    const id = await newSession(first.app, first.token);
    const one = await playground(first.app, 'POST', '/api/playground/chat', {
      token: first.token,
      body: { session_id: id, message: 'My name is Alice' },
    });
    expect(one.body.content).toContain('0 earlier messages');
    await first.app.close();
    apps.splice(apps.indexOf(first.app), 1);

    const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', ...env });
    apps.push(app);
    const token = await accessToken(app, 'alice');
    const two = await playground(app, 'POST', '/api/playground/chat', {
      token,
      body: { session_id: id, message: 'What is my name?' },
    });
    expect(two.status).toBe(200);
    // The model saw the first exchange: the agent's checkpoint of the session's conversation survived.
    expect(two.body.content).toContain('2 earlier messages');
    const detail = await playground(app, 'GET', `/api/playground/sessions/${id}`, { token });
    expect((detail.body.messages as Json[]).map((m) => m.content)).toEqual([
      'My name is Alice',
      one.body.content,
      'What is my name?',
      two.body.content,
    ]);
  });
});

describe('observability of a session', () => {
  it("reports traces, logs and metrics that match what the session's turns did", async () => {
    const { app, token } = await setUp();
    const id = await newSession(app, token);
    const first = await playground(app, 'POST', '/api/playground/chat', {
      token,
      body: { session_id: id, message: 'search for audit log' },
    });
    const second = await playground(app, 'POST', '/api/playground/chat', {
      token,
      body: { session_id: id, message: 'Thanks' },
    });
    const total = [first, second].reduce((sum, r) => sum + ((r.body.usage as Json).total_tokens as number), 0);

    const metrics = await playground(app, 'GET', `/api/playground/observability/metrics?session_id=${id}`, { token });
    expect(metrics.body).toEqual({
      session_id: id,
      message_count: 4,
      total_tokens: total,
      average_latency_ms: expect.any(Number) as unknown,
      error_count: 0,
      tool_call_count: 1,
    });

    const traces = await playground<Json[]>(app, 'GET', `/api/playground/observability/traces?session_id=${id}`, {
      token,
    });
    expect(traces.status).toBe(200);
    const spans = traces.body;
    const roots = spans.filter((s) => s.parent_span_id === null);
    expect(roots.map((s) => s.operation)).toEqual(['invoke_agent agent-service', 'invoke_agent agent-service']);
    // One trace per turn: the first called the model, the tool, then the model again; the second the model once.
    const trace = (root: Json) => spans.filter((s) => s.trace_id === root.trace_id && s !== root);
    expect(trace(roots[0]!).map((s) => s.operation)).toEqual([
      'chat offline',
      'execute_tool search_web',
      'chat offline',
    ]);
    expect(trace(roots[1]!).map((s) => s.operation)).toEqual(['chat offline']);
    for (const span of spans) {
      expect(span.status).toBe('ok');
      expect(Number.isInteger(span.duration_ms)).toBe(true);
      if (span.parent_span_id !== null) {
        expect(span.parent_span_id).toBe(roots.find((r) => r.trace_id === span.trace_id)!.span_id);
      }
    }
    expect(roots[0]!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'offline',
      'gen_ai.request.model': 'offline',
      'playground.session_id': id,
      'gen_ai.usage.input_tokens': (first.body.usage as Json).prompt_tokens,
      'gen_ai.usage.output_tokens': (first.body.usage as Json).completion_tokens,
    });
    expect(trace(roots[0]!)[1]!.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'search_web',
    });
    // The model spans' token counts add up to the turn's.
    const modelTokens = trace(roots[0]!)
      .filter((s) => s.operation === 'chat offline')
      .reduce((sum, s) => sum + ((s.attributes as Json)['gen_ai.usage.output_tokens'] as number), 0);
    expect(modelTokens).toBe((first.body.usage as Json).completion_tokens);
    const limited = await playground<Json[]>(
      app,
      'GET',
      `/api/playground/observability/traces?session_id=${id}&limit=2`,
      { token },
    );
    expect(limited.body).toHaveLength(2);

    const logs = await playground<Json[]>(app, 'GET', `/api/playground/observability/logs?session_id=${id}`, {
      token,
    });
    expect(logs.body.map((l) => l.message)).toEqual([
      'session created',
      'turn started',
      'tool search_web called',
      'turn finished',
      'turn started',
      'turn finished',
    ]);
    expect(logs.body.every((l) => l.level === 'INFO')).toBe(true);
    const debug = await playground<Json[]>(
      app,
      'GET',
      `/api/playground/observability/logs?session_id=${id}&level=debug`,
      { token },
    );
    expect(debug.body.map((l) => l.message)).toContain('tool search_web answered');
    const errors = await playground<Json[]>(
      app,
      'GET',
      `/api/playground/observability/logs?session_id=${id}&level=ERROR`,
      { token },
    );
    expect(errors.body).toEqual([]);
  });
});

describe("a person's data", () => {
  it('is exported with their playground sessions, and erased with them', async () => {
    const { app, alice, token } = await setUp();
    const id = await newSession(app, token, 'Exported');
    await playground(app, 'POST', '/api/playground/chat', { token, body: { session_id: id, message: 'Hi' } });

    const data = await call(app, 'GET', '/api/v1/users/me/data', { token });
    const sessions = data.body.playground_sessions as Json[];
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ session_id: id, name: 'Exported' });
    expect((sessions[0]!.messages as Json[]).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect((sessions[0]!.traces as Json[]).length).toBeGreaterThanOrEqual(2);
    expect((sessions[0]!.logs as Json[]).map((l) => l.message)).toContain('turn finished');

    const erased = await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { token });
    expect(erased.status).toBe(200);
    expect((erased.body.deleted_items as Json).playground_sessions).toBe(1);
    const { db } = app.infrastructure;
    for (const table of [
      'playground_sessions',
      'playground_messages',
      'playground_spans',
      'playground_logs',
    ] as const) {
      expect(await db.kysely.selectFrom(table).selectAll().execute(), table).toEqual([]);
    }
    expect(await app.services.users.get(alice.id)).toBeUndefined();
  });
});
