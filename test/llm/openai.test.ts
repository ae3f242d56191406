import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOpenAiLlm, type OpenAiLlmConfig } from '../../src/adapters/llm/openai.js';
import {
  type ChatMessage,
  type LlmEvent,
  type LlmProvider,
  type ToolSpec,
  usageOfAborted,
} from '../../src/adapters/llm/port.js';
import { InternalError, RateLimitError, ServiceUnavailableError } from '../../src/errors.js';
import { llmContract } from '../contracts/llm.contract.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';

// Every test here goes through the provider (the official `openai` client's rules, errors and types) to a FAKE of a hosted OpenAI-compatible API
// (test/fakes/openai.ts) over real HTTP: no such service can run here. The fake speaks the real wire format.

const MODEL = 'gpt-4o-mini';
const API_KEY = 'sk-test-4f9c2a7d1e';

llmContract('openai (fake OpenAI-compatible API)', async () => {
  const fake = await startFakeOpenAi([MODEL]);
  return {
    llm: createOpenAiLlm({ baseUrl: fake.url, apiKey: API_KEY, model: MODEL }),
    script: (answer) => {
      fake.replies.push('text' in answer ? { text: answer.text } : { toolCalls: answer.toolCalls });
    },
    cleanup: fake.close,
  };
});

const SEARCH_WEB: ToolSpec = {
  name: 'search_web',
  description: 'Searches the web.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};
const GET_TIME: ToolSpec = {
  name: 'get_time',
  description: 'Tells the time in a time zone.',
  parameters: { type: 'object', properties: { zone: { type: 'string' } } },
};

const fakes: FakeOpenAi[] = [];
afterEach(async () => {
  while (fakes.length > 0) await fakes.pop()!.close();
});

async function setUp(options: Partial<OpenAiLlmConfig> = {}): Promise<{ fake: FakeOpenAi; llm: LlmProvider }> {
  const fake = await startFakeOpenAi([MODEL]);
  fakes.push(fake);
  return { fake, llm: createOpenAiLlm({ baseUrl: fake.url, apiKey: API_KEY, model: MODEL, ...options }) };
}

async function events(stream: AsyncIterable<LlmEvent>): Promise<LlmEvent[]> {
  const seen: LlmEvent[] = [];
  for await (const event of stream) seen.push(event);
  return seen;
}

/** The bodies of the chat-completion requests the fake received. */
function chatBodies(fake: FakeOpenAi): Record<string, unknown>[] {
  return fake.requests
    .filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions')
    .map((r) => r.body as Record<string, unknown>);
}

const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('openai provider (fake OpenAI-compatible API)', () => {
  it('streams the text in deltas that concatenate to it, asking for a stream with usage', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'Hello there!  How can I help you today?' });
    const streamed = await events(llm.stream({ messages: [user('Hi')], maxTokens: 50, temperature: 0.2 }));
    const deltas = streamed.flatMap((e) => (e.type === 'delta' ? [e.text] : []));
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('Hello there!  How can I help you today?');
    expect(streamed.at(-1)).toMatchObject({ type: 'done', finishReason: 'stop' });
    expect(llm).toMatchObject({ provider: 'openai', model: MODEL });
    expect(fake.requests.at(-1)?.authorization).toBe(`Bearer ${API_KEY}`);
    expect(chatBodies(fake)).toEqual([
      {
        model: MODEL,
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        stream_options: { include_usage: true },
        max_completion_tokens: 50,
        temperature: 0.2,
      },
    ]);
  });

  it('assembles tool calls from streamed fragments, and sends their results back in the next request', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({
      toolCalls: [
        { id: 'call_abc', name: 'search_web', arguments: { query: 'weather in Paris', limit: 3 } },
        { id: 'call_def', name: 'get_time', arguments: { zone: 'Europe/Paris' } },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 18 },
    });
    fake.replies.push({ text: 'It is sunny in Paris, and 14:00 there.' });
    const tools = [SEARCH_WEB, GET_TIME];
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Use tools.' },
      user('What is the weather in Paris, and the time there?'),
    ];

    const first = await llm.complete({ messages, tools });
    expect(first).toEqual({
      text: '',
      toolCalls: [
        { id: 'call_abc', name: 'search_web', arguments: { query: 'weather in Paris', limit: 3 } },
        { id: 'call_def', name: 'get_time', arguments: { zone: 'Europe/Paris' } },
      ],
      usage: { promptTokens: 40, completionTokens: 18, totalTokens: 58 },
      finishReason: 'tool_calls',
    });

    // Execute the tools, then feed the results back as the agent loop does.
    const run = (name: string, args: Record<string, unknown>) =>
      name === 'search_web' ? `Sunny (query: ${String(args.query)})` : `14:00 in ${String(args.zone)}`;
    messages.push({ role: 'assistant', content: first.text, toolCalls: first.toolCalls });
    for (const call of first.toolCalls) {
      messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: run(call.name, call.arguments) });
    }
    const second = await llm.complete({ messages, tools });
    expect(second).toMatchObject({
      text: 'It is sunny in Paris, and 14:00 there.',
      toolCalls: [],
      finishReason: 'stop',
    });

    const [body1, body2] = chatBodies(fake);
    expect(body1).toMatchObject({
      tools: [
        { type: 'function', function: SEARCH_WEB },
        { type: 'function', function: GET_TIME },
      ],
      tool_choice: 'auto',
    });
    expect(body2?.messages).toEqual([
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: 'What is the weather in Paris, and the time there?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_abc',
            type: 'function',
            function: { name: 'search_web', arguments: '{"query":"weather in Paris","limit":3}' },
          },
          { id: 'call_def', type: 'function', function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: 'Sunny (query: weather in Paris)' },
      { role: 'tool', tool_call_id: 'call_def', content: '14:00 in Europe/Paris' },
    ]);
  });

  it('reports the usage the provider sends, adding up the total itself', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'Four.', usage: { prompt_tokens: 12, completion_tokens: 5 } });
    const streamed = await events(llm.stream({ messages: [user('2 + 2?')] }));
    expect(streamed.at(-1)).toEqual({
      type: 'done',
      usage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
      finishReason: 'stop',
    });
  });

  it('still ends with done, counting zero tokens, when the server sends no usage', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'No usage here.', usage: null });
    const completion = await llm.complete({ messages: [user('Hi')] });
    expect(completion).toMatchObject({
      text: 'No usage here.',
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      finishReason: 'stop',
    });
  });

  it('reports a cut-off answer as finishReason length', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'Once upon a', finishReason: 'length' });
    expect(await llm.complete({ messages: [user('A story, please')], maxTokens: 3 })).toMatchObject({
      text: 'Once upon a',
      finishReason: 'length',
    });
  });

  it('sends the earlier turns with the next one', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'Nice to meet you, Ada.' }, { text: 'Your name is Ada.' });
    const messages: ChatMessage[] = [{ role: 'system', content: 'Be kind.' }, user('I am Ada.')];
    const first = await llm.complete({ messages });
    messages.push({ role: 'assistant', content: first.text }, user('What is my name?'));
    expect((await llm.complete({ messages })).text).toBe('Your name is Ada.');
    expect(chatBodies(fake)[1]?.messages).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'I am Ada.' },
      { role: 'assistant', content: 'Nice to meet you, Ada.' },
      { role: 'user', content: 'What is my name?' },
    ]);
  });

  it('gives tool calls {} as arguments when the provider sends malformed JSON', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ toolCalls: [{ id: 'call_bad', name: 'search_web', arguments: '{"query": "cats"' }] });
    const completion = await llm.complete({ messages: [user('search for cats')], tools: [SEARCH_WEB] });
    expect(completion.toolCalls).toEqual([{ id: 'call_bad', name: 'search_web', arguments: {} }]);
    expect(completion.finishReason).toBe('tool_calls');
  });

  it('retries a 429 and then succeeds', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 429;
    fake.failTimes = 1;
    fake.replies.push({ text: 'Made it.' });
    expect((await llm.complete({ messages: [user('Hi')] })).text).toBe('Made it.');
    expect(chatBodies(fake)).toHaveLength(2);
  });

  it('retries a 500 and then succeeds', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 500;
    fake.failTimes = 2;
    fake.replies.push({ text: 'Third time lucky.' });
    expect((await llm.complete({ messages: [user('Hi')] })).text).toBe('Third time lucky.');
    expect(chatBodies(fake)).toHaveLength(3);
  });

  it('does not retry a 5xx the provider says not to, and retries a 4xx it says to', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 500;
    fake.failHeaders = { 'x-should-retry': 'false' };
    await expect(llm.complete({ messages: [user('Hi')] })).rejects.toMatchObject({
      message: 'LLM provider failed to answer',
    });
    expect(chatBodies(fake)).toHaveLength(1);

    fake.failWith = 400;
    fake.failTimes = 1;
    fake.failHeaders = { 'x-should-retry': 'true' };
    fake.replies.push({ text: 'Told to try again.' });
    expect((await llm.complete({ messages: [user('Hi')] })).text).toBe('Told to try again.');
    expect(chatBodies(fake)).toHaveLength(3);
  });

  it('waits its own backoff when the provider asks for a wait longer than a minute', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 429;
    fake.failTimes = 1;
    fake.retryAfter = '3600';
    fake.retryAfterMs = undefined;
    fake.replies.push({ text: 'After a short wait.' });
    const began = performance.now();
    expect((await llm.complete({ messages: [user('Hi')] })).text).toBe('After a short wait.');
    // The first backoff: half a second, less up to a quarter.
    expect(performance.now() - began).toBeGreaterThanOrEqual(370);
    expect(chatBodies(fake)).toHaveLength(2);
  });

  it('stops waiting between attempts as soon as it is aborted', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 429;
    fake.retryAfterMs = 30_000;
    const controller = new AbortController();
    const pending = llm.complete({ messages: [user('Hi')], signal: controller.signal });
    await expect.poll(() => fake.requests.length).toBe(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(chatBodies(fake)).toHaveLength(1);
  });

  it('sends the key as a bearer token, and no Authorization header without one', async () => {
    const { fake, llm } = await setUp();
    await llm.complete({ messages: [user('Hi')] });
    const keyless = createOpenAiLlm({ baseUrl: fake.url, model: MODEL });
    await keyless.complete({ messages: [user('Hi')] });
    expect(fake.requests.map((r) => r.authorization)).toEqual([`Bearer ${API_KEY}`, undefined]);
  });

  it('turns a rate limit that outlasts the retries into a RateLimitError with the provider retry-after', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 429;
    fake.retryAfter = '7';
    const error = await llm.complete({ messages: [user('Hi')] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'RATE_LIMIT', retryAfterSeconds: 7 });
    // One try and the default two retries.
    expect(chatBodies(fake)).toHaveLength(3);
  });

  it('asks clients to wait 30 s when a rate-limited provider does not say how long', async () => {
    const { fake, llm } = await setUp({ maxRetries: 0 });
    fake.failWith = 429;
    const error = await llm.complete({ messages: [user('Hi')] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ retryAfterSeconds: 30 });
    expect(chatBodies(fake)).toHaveLength(1);
  });

  it('turns a rejected key into a ServiceUnavailableError that never repeats the key', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 401;
    const error = await llm.complete({ messages: [user('Hi')] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'LLM provider rejected the API key',
    });
    // The fake's own message quotes the key, so nothing derived from it may reach the error.
    expect(String((error as Error).cause)).toContain('status 401');
    expect(JSON.stringify(error) + String((error as Error).cause) + (error as Error).message).not.toContain(API_KEY);
    expect(chatBodies(fake)).toHaveLength(1);
  });

  it('turns a 403 into the same ServiceUnavailableError', async () => {
    const { fake, llm } = await setUp();
    fake.failWith = 403;
    await expect(llm.complete({ messages: [user('Hi')] })).rejects.toMatchObject({
      status: 503,
      message: 'LLM provider rejected the API key',
    });
  });

  it('turns a request the provider refuses into an InternalError with a safe message', async () => {
    const { llm } = await setUp();
    // A tool result that answers no tool call: the API refuses it with a 400.
    const error = await llm
      .complete({ messages: [user('Hi'), { role: 'tool', toolCallId: 'call_x', name: 'search_web', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalError);
    expect(error).toMatchObject({ status: 500, code: 'INTERNAL_ERROR', expose: false });
    expect((error as Error).message).toBe('LLM provider refused the request (status 400)');
  });

  it('turns a provider that does not answer in time into a ServiceUnavailableError naming the timeout', async () => {
    const { fake, llm } = await setUp({ timeoutMs: 100, maxRetries: 0 });
    fake.delayMs = 10_000;
    const error = await llm.complete({ messages: [user('Hi')] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: 'LLM provider did not answer within 100 ms' });
  });

  it('tries again an attempt whose answer did not start in time', async () => {
    const { fake, llm } = await setUp({ timeoutMs: 100, maxRetries: 1 });
    fake.delayMs = 10_000;
    fake.replies.push({ text: 'Second time lucky.' });
    const answer = llm.complete({ messages: [user('Hi')] });
    await vi.waitFor(() => expect(fake.requests).toHaveLength(1));
    fake.delayMs = 0;
    expect((await answer).text).toBe('Second time lucky.');
    expect(fake.requests).toHaveLength(2);
  });

  it('turns a stream that stalls into a ServiceUnavailableError naming the timeout', async () => {
    const { fake, llm } = await setUp({ timeoutMs: 100, maxRetries: 0 });
    fake.chunkDelayMs = 10_000;
    fake.replies.push({ text: 'This will never finish.' });
    const error = await llm.complete({ messages: [user('Hi')] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ message: 'LLM provider stopped streaming for 100 ms' });
  });

  it('turns an error the provider sends mid-answer into a ServiceUnavailableError, after the text before it', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'Half an', streamError: { message: 'The server had an error.', type: 'server_error' } });
    const deltas: string[] = [];
    const consume = async () => {
      for await (const event of llm.stream({ messages: [user('Talk')] })) {
        if (event.type === 'delta') deltas.push(event.text);
      }
    };
    const error = await consume().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ message: 'LLM provider failed to answer' });
    expect(deltas.join('')).toBe('Half an');
  });

  it('asks one request after another on one kept-alive connection', async () => {
    const { fake, llm } = await setUp();
    fake.replies.push({ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' });
    for (const expected of ['One.', 'Two.', 'Three.']) {
      expect((await llm.complete({ messages: [user('Next')] })).text).toBe(expected);
    }
    const ports = fake.requests.map((r) => r.remotePort);
    expect(ports).toHaveLength(3);
    expect(new Set(ports).size).toBe(1);
  });

  it('turns an unreachable endpoint into a ServiceUnavailableError', async () => {
    const { fake, llm } = await setUp({ maxRetries: 0 });
    await fake.close();
    await expect(llm.complete({ messages: [user('Hi')] })).rejects.toMatchObject({
      status: 503,
      message: 'LLM provider is unreachable',
    });
  });

  it('stops mid-stream when aborted, without reading the rest', async () => {
    const { fake, llm } = await setUp();
    fake.chunkDelayMs = 20;
    fake.replies.push({ text: Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ') });
    const controller = new AbortController();
    const deltas: string[] = [];
    const consume = async () => {
      for await (const event of llm.stream({ messages: [user('Talk')], signal: controller.signal })) {
        if (event.type === 'delta') deltas.push(event.text);
        if (deltas.length === 3) controller.abort();
      }
    };
    await expect(consume()).rejects.toMatchObject({ name: 'AbortError' });
    expect(deltas).toEqual(['w0', ' w1', ' w2']);
  });

  it('ends in an AbortError that keeps the caller’s own reason, and estimates the prompt it had sent', async () => {
    const { fake, llm } = await setUp();
    fake.delayMs = 10_000;
    const controller = new AbortController();
    const reason = new DOMException('user left', 'AbortError');
    const prompt = 'Hi there, tell me about cookies';
    const pending = llm.complete({ messages: [user(prompt)], signal: controller.signal });
    await expect.poll(() => fake.requests.length).toBe(1);
    controller.abort(reason);
    const error = await pending.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toMatchObject({ name: 'AbortError', cause: reason });
    // No answer came, so no count: about four characters a token, for the prompt alone.
    expect(usageOfAborted(error)).toEqual({
      promptTokens: Math.ceil(prompt.length / 4),
      completionTokens: 0,
      totalTokens: Math.ceil(prompt.length / 4),
    });
  });

  it('checks its health against the same endpoint', async () => {
    const { llm } = await setUp();
    const check = llm.healthCheck();
    expect(check).toMatchObject({ name: 'llm_provider', details: { provider: 'openai', model: MODEL } });
    expect(await check.run(new AbortController().signal)).toEqual({ status: 'healthy' });
  });
});
