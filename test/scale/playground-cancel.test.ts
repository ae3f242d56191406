import { expect, it } from 'vitest';
import { accessToken, call, createUser } from '../helpers/auth.js';
import { twoChatInstances } from '../helpers/instances.js';
import { describeWithService, probeRedis } from '../helpers/services.js';

/**
 * A playground turn streamed by one instance and stopped from another: the turn lock and the cancel signal go
 * through Redis. The model is a FAKE OpenAI-compatible API (no hosted model runs here) that streams slowly.
 */
describeWithService('playground turns across two instances', await probeRedis(), () => {
  const instances = twoChatInstances('cancel');
  const { playground } = instances;

  it('a turn streaming on A is stopped from B, and B refuses a second turn meanwhile', async () => {
    const { a, b, fake, token } = instances;
    fake.chunkDelayMs = 40;
    fake.replies.push({ text: Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ') });
    const session = (await playground(a, 'POST', '/api/playground/sessions', { name: 'shared' })).body
      .session_id as string;
    const res = await fetch(`${a.url('playground')}/api/playground/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ session_id: session, message: 'A long one', stream: true }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    expect(text).toContain('event: token');

    const second = await playground(b, 'POST', '/api/playground/chat', { session_id: session, message: 'Me too' });
    expect(second).toMatchObject({ status: 409, body: { code: 'PLAYGROUND_TURN_RUNNING' } });

    expect((await playground(b, 'POST', `/api/playground/sessions/${session}/cancel`)).status).toBe(202);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const end = /event: end\ndata: (.*)\n/.exec(text)?.[1];
    expect(JSON.parse(end!)).toMatchObject({ cancelled: true });

    // Once stopped, nothing runs: cancelling again is 409, and a new turn may start on either instance.
    const again = await playground(b, 'POST', `/api/playground/sessions/${session}/cancel`);
    expect(again).toMatchObject({ status: 409, body: { code: 'PLAYGROUND_NO_TURN_RUNNING' } });
    fake.replies.push({ text: 'short' });
    expect((await playground(b, 'POST', '/api/playground/chat', { session_id: session, message: 'Hi' })).status).toBe(
      200,
    );
  });

  it("another user's session cannot be cancelled (404, as if it did not exist)", async () => {
    const { a, b } = instances;
    await createUser(a, 'mallory');
    const session = (await playground(a, 'POST', '/api/playground/sessions', { name: 'mine' })).body
      .session_id as string;
    const other = await accessToken(b, 'mallory');
    const res = await call(b, 'POST', `/api/playground/sessions/${session}/cancel`, {
      token: other,
      listener: 'playground',
    });
    expect(res.status).toBe(404);
  });
});
