import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type FakeOpenAi, type ScriptedReply, startFakeOpenAi } from '../fakes/openai.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, call, createUser } from '../helpers/auth.js';
import { parseEvents } from '../helpers/sse.js';
import { type Json, playground, streamChat } from './helpers.js';

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

  /** A session of alice's on a service whose model is the FAKE, streaming `replies` slowly enough to stop. */
  async function stoppableSession(replies: ScriptedReply[]) {
    const fake = await startFakeOpenAi(['gpt-test']);
    open.push(fake);
    fake.chunkDelayMs = 40;
    fake.replies.push(...replies);
    const app = await startTestApp({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'gpt-test',
      LLM_API_KEY: 'sk-fake',
    });
    open.push(app);
    await createUser(app, 'alice');
    const token = await accessToken(app, 'alice');
    const session = (await playground(app, 'POST', '/api/playground/sessions', { token, body: { name: 's' } })).body
      .session_id as string;
    return { fake, app, token, session };
  }

  /** Streams a turn and stops it from another request once `stopAfter` words have come; returns what came. */
  async function stopHalfWay(app: App, token: string, session: string, message: string, stopAfter: number) {
    const res = await fetch(`${app.url('playground')}/api/playground/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ session_id: session, message, stream: true }),
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = '';
    let stopped = false;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      received += chunk.value;
      const words = parseEvents(received.slice(0, received.lastIndexOf('\n\n') + 2)).filter(
        (e) => e.event === 'token',
      ).length;
      if (!stopped && words >= stopAfter) {
        stopped = true;
        const cancel = await playground(app, 'POST', `/api/playground/sessions/${session}/cancel`, { token });
        expect(cancel.status).toBe(202);
      }
    }
    const events = parseEvents(received);
    const shown = events
      .filter((e) => e.event === 'token')
      .map((e) => e.data.content as string)
      .join('');
    const end = events.find((e) => e.event === 'end')!.data;
    return { events, shown, end };
  }

  /** The conversation the FAKE model was sent by the last chat completion request. */
  function lastSentConversation(fake: FakeOpenAi) {
    const requests = fake.requests.filter((r) => r.path === '/v1/chat/completions');
    return (requests.at(-1)!.body as { messages: Json[] }).messages;
  }

  it('keeps a stopped answer in what the model is sent next turn, exactly as it was shown', async () => {
    const long = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
    const { fake, app, token, session } = await stoppableSession([{ text: long }, { text: 'Go on from there.' }]);

    const first = await stopHalfWay(app, token, session, 'A long one', 3);
    expect(first.end).toMatchObject({ cancelled: true });
    expect(first.shown.length).toBeGreaterThan(0);
    expect(first.shown).not.toBe(long);
    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    const stored = (detail.body.messages as Json[])[1]!;
    expect(stored).toMatchObject({ role: 'assistant', cancelled: true, content: first.shown });

    const second = await streamChat(app, token, session, 'And then?');
    expect(second.events.at(-1)).toMatchObject({ event: 'end', data: { cancelled: false } });
    expect(lastSentConversation(fake).slice(1)).toEqual([
      { role: 'user', content: 'A long one' },
      { role: 'assistant', content: first.shown },
      { role: 'user', content: 'And then?' },
    ]);
  });

  it('counts a stopped answer’s tokens the same in its message, its trace and the session metrics', async () => {
    const long = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
    const { app, token, session } = await stoppableSession([{ text: long }]);

    const { end, shown } = await stopHalfWay(app, token, session, 'Count what you used', 3);
    const usage = end.usage as { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    // The model never sent a count for a stream it did not finish: the provider estimates both parts.
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.completion_tokens).toBeLessThan(long.length / 4);
    expect(shown.length).toBeGreaterThan(0);

    const detail = await playground(app, 'GET', `/api/playground/sessions/${session}`, { token });
    expect((detail.body.messages as Json[])[1]).toMatchObject({ cancelled: true, usage });
    expect(detail.body.total_tokens).toBe(usage.total_tokens);

    const traces = await playground<Json[]>(app, 'GET', `/api/playground/observability/traces?session_id=${session}`, {
      token,
    });
    const turn = traces.body.find((span) => String(span.operation).startsWith('invoke_agent'))!;
    expect(turn.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': usage.prompt_tokens,
      'gen_ai.usage.output_tokens': usage.completion_tokens,
      'error.type': 'cancelled',
    });
    const modelCall = traces.body.find((span) => String(span.operation).startsWith('chat '))!;
    expect(modelCall.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': usage.prompt_tokens,
      'gen_ai.usage.output_tokens': usage.completion_tokens,
    });

    const metrics = await playground(app, 'GET', `/api/playground/observability/metrics?session_id=${session}`, {
      token,
    });
    expect(metrics.body).toMatchObject({ message_count: 2, total_tokens: usage.total_tokens });
  });

  it('keeps a stopped answer’s tool call and result for the next turn, as the model API requires them', async () => {
    const long = Array.from({ length: 80 }, (_, i) => `found${i}`).join(' ');
    const { fake, app, token, session } = await stoppableSession([
      { text: 'Let me look.', toolCalls: [{ name: 'search_web', arguments: { query: 'cookies' } }] },
      { text: long },
      { text: 'Carrying on.' },
    ]);

    const first = await stopHalfWay(app, token, session, 'Search for cookies', 6);
    expect(first.end).toMatchObject({ cancelled: true });
    const result = first.events.find((e) => e.event === 'tool_result')!.data.content as string;
    expect(first.shown.startsWith('Let me look.')).toBe(true);
    const after = first.shown.slice('Let me look.'.length);
    expect(after.length).toBeGreaterThan(0);

    const second = await streamChat(app, token, session, 'And then?');
    // The FAKE refuses, as the real API does, a conversation whose tool calls are not each answered.
    expect(second.events.at(-1)).toMatchObject({ event: 'end', data: { cancelled: false } });
    const sent = lastSentConversation(fake).slice(1);
    expect(sent).toMatchObject([
      { role: 'user', content: 'Search for cookies' },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [{ type: 'function', function: { name: 'search_web', arguments: '{"query":"cookies"}' } }],
      },
      { role: 'tool', content: result },
      { role: 'assistant', content: after },
      { role: 'user', content: 'And then?' },
    ]);
    expect(sent[2]!.tool_call_id).toBe((sent[1]!.tool_calls as { id: string }[])[0]!.id);
  });
});
