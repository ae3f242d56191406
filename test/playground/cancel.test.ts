import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, call, createUser } from '../helpers/auth.js';

/** `POST /api/playground/sessions/{id}/cancel` on one instance (the model: a FAKE OpenAI-compatible API). */
const open: { close(): unknown }[] = [];
afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
});

describe('cancelling a playground turn by its session', () => {
  it('stops a streamed turn from another request, keeping the partial answer', async () => {
    const fake: FakeOpenAi = await startFakeOpenAi(['gpt-test']);
    open.push(fake);
    fake.chunkDelayMs = 40;
    fake.replies.push({ text: Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ') });
    const app: App = await startTestApp({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'gpt-test',
      LLM_API_KEY: 'sk-fake',
    });
    open.push(app);
    await createUser(app, 'alice');
    const token = await accessToken(app, 'alice');
    const session = (
      await call(app, 'POST', '/api/playground/sessions', { token, listener: 'playground', body: { name: 's' } })
    ).body.session_id as string;
    const cancel = () =>
      call(app, 'POST', `/api/playground/sessions/${session}/cancel`, { token, listener: 'playground' });
    expect((await cancel()).status).toBe(409);

    const res = await fetch(`${app.url('playground')}/api/playground/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ session_id: session, message: 'A long one', stream: true }),
    });
    const text = res.body!.pipeThrough(new TextDecoderStream());
    const reader = text.getReader();
    let received = (await reader.read()).value ?? '';
    expect((await cancel()).status).toBe(202);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) received += chunk.value;
    expect(JSON.parse(/event: end\ndata: (.*)\n/.exec(received)![1]!)).toMatchObject({ cancelled: true });
    const detail = await call(app, 'GET', `/api/playground/sessions/${session}`, { token, listener: 'playground' });
    const answer = (detail.body.messages as { role: string; cancelled: boolean; content: string }[])[1]!;
    expect(answer).toMatchObject({ role: 'assistant', cancelled: true });
    expect(answer.content.split(' ').length).toBeLessThan(80);
  });
});
