import { expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { twoChatInstances } from '../helpers/instances.js';
import { describeWithService, probeRedis } from '../helpers/services.js';

/**
 * What a playground turn holds on to for the next one (the session's row, its conversation's) is let go on every
 * instance when another changes it: two instances share one database and Redis, and a turn on one follows what
 * the other did. The model is a FAKE OpenAI-compatible API (no hosted model runs here) that records each request.
 */
describeWithService('turn state held across two instances', await probeRedis(), () => {
  const instances = twoChatInstances('turn-state');
  const { playground } = instances;
  const newSession = async (app: App) =>
    (await playground(app, 'POST', '/api/playground/sessions', { name: 'shared' })).body.session_id as string;
  const chat = (app: App, session: string, message: string) =>
    playground(app, 'POST', '/api/playground/chat', { session_id: session, message });
  /** What the model was last asked, one line per message. */
  const lastAsked = () =>
    (instances.fake.requests.at(-1)?.body as { messages: { role: string; content: string }[] }).messages.map(
      (m) => `${m.role}: ${m.content}`,
    );

  it('sends the model what a turn on B added when the next turn runs on A', async () => {
    const { a, b, fake } = instances;
    const session = await newSession(a);
    fake.replies.push({ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' });
    // Two turns on A: the second continues the conversation A read, and holds.
    expect((await chat(a, session, 'first')).status).toBe(200);
    expect((await chat(a, session, 'second')).status).toBe(200);
    expect((await chat(b, session, 'third')).status).toBe(200);
    expect((await chat(a, session, 'fourth')).status).toBe(200);
    expect(lastAsked().slice(1)).toEqual([
      'user: first',
      'assistant: one',
      'user: second',
      'assistant: two',
      'user: third',
      'assistant: three',
      'user: fourth',
    ]);
  });

  it('refuses a turn on A in a session deleted through B, though A ran its last turn', async () => {
    const { a, b, fake } = instances;
    const session = await newSession(a);
    expect((await chat(a, session, 'hello')).status).toBe(200);
    expect((await chat(a, session, 'again')).status).toBe(200);
    expect((await playground(b, 'DELETE', `/api/playground/sessions/${session}`)).status).toBe(204);
    const asked = fake.requests.length;
    expect(await chat(a, session, 'still there?')).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    expect(fake.requests.length).toBe(asked);
    const sessions = (await playground(a, 'GET', '/api/playground/sessions')).body as unknown as {
      session_id: string;
    }[];
    expect(sessions.map((s) => s.session_id)).not.toContain(session);
  });
});
