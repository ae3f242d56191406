import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, createUser } from '../helpers/auth.js';
import { type Json, newSession, playground } from './helpers.js';

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

/** Everything alice's own API shows of one of her sessions. */
async function snapshot(app: App, token: string, id: string) {
  const read = (path: string) => playground(app, 'GET', path, { token });
  const [detail, list, traces, logs, metrics] = await Promise.all([
    read(`/api/playground/sessions/${id}`),
    read('/api/playground/sessions'),
    read(`/api/playground/observability/traces?session_id=${id}`),
    read(`/api/playground/observability/logs?session_id=${id}&level=DEBUG`),
    read(`/api/playground/observability/metrics?session_id=${id}`),
  ]);
  for (const reply of [detail, list, traces, logs, metrics]) expect(reply.status).toBe(200);
  return { detail: detail.body, list: list.body, traces: traces.body, logs: logs.body, metrics: metrics.body };
}

describe("another user's request on a playground session", () => {
  it('is refused with 404 and leaves its transcript, spans, logs and totals as they were', async () => {
    const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1' });
    apps.push(app);
    await createUser(app, 'alice');
    await createUser(app, 'bob');
    const alice = await accessToken(app, 'alice');
    const bob = await accessToken(app, 'bob');
    const id = await newSession(app, alice, 'Private');
    // Two turns: the second runs in the session as its first left it, which the service holds for the next.
    for (const message of ['Hello there', 'Still me']) {
      const chat = await playground(app, 'POST', '/api/playground/chat', {
        token: alice,
        body: { session_id: id, message },
      });
      expect(chat.status).toBe(200);
    }

    const before = await snapshot(app, alice, id);
    expect((before.detail.messages as Json[]).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(before.metrics).toMatchObject({ message_count: 4 });
    expect((before.traces as unknown as Json[]).length).toBeGreaterThan(0);
    expect((before.logs as unknown as Json[]).length).toBeGreaterThan(0);

    for (const [method, path, body] of [
      ['DELETE', `/api/playground/sessions/${id}`],
      ['PATCH', `/api/playground/sessions/${id}`, { name: 'Mine now', metadata: { taken: true } }],
      ['POST', '/api/playground/chat', { session_id: id, message: 'Let me in' }],
      ['POST', `/api/playground/sessions/${id}/cancel`],
    ] as const) {
      const refused = await playground(app, method, path, { token: bob, ...(body && { body }) });
      expect(refused.status, `${method} ${path}`).toBe(404);
      expect(refused.body, `${method} ${path}`).toMatchObject({ error: 'not_found', code: 'NOT_FOUND' });
    }

    expect(await snapshot(app, alice, id)).toEqual(before);
  });
});
