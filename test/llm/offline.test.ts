import { describe, expect, it } from 'vitest';
import { createOfflineLlm } from '../../src/adapters/llm/offline.js';
import type { ChatMessage, CompletionRequest, LlmEvent, ToolSpec } from '../../src/adapters/llm/port.js';
import { llmContract } from '../contracts/llm.contract.js';

llmContract('offline', () =>
  Promise.resolve({
    llm: createOfflineLlm(),
    // The offline model answers by its rule; the contract's inputs are chosen so that it fits.
    script: () => undefined,
    cleanup: () => Promise.resolve(),
  }),
);

const tool = (name: string): ToolSpec => ({ name, description: `The ${name} tool.`, parameters: { type: 'object' } });
const user = (content: string): ChatMessage => ({ role: 'user', content });

async function events(request: CompletionRequest): Promise<LlmEvent[]> {
  const seen: LlmEvent[] = [];
  for await (const event of createOfflineLlm().stream(request)) seen.push(event);
  return seen;
}

describe('offline model', () => {
  const llm = createOfflineLlm();

  it('names itself as the offline model, in its answers and its health details', async () => {
    expect(llm).toMatchObject({ provider: 'offline', model: 'offline' });
    const { text } = await llm.complete({ messages: [user('Hello')] });
    expect(text).toMatch(/^Offline model: you said "Hello"\./);
    expect(text).toContain('No real model is configured');
    expect(llm.healthCheck()).toMatchObject({
      name: 'llm_provider',
      details: { provider: 'offline', model: 'offline' },
    });
  });

  it('answers the same request with the same events every time', async () => {
    const request: CompletionRequest = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        user('What is 2 + 2?'),
        { role: 'assistant', content: '4' },
        user('And 3 + 3?'),
      ],
      tools: [tool('calculator')],
    };
    const first = await events(request);
    expect(first.length).toBeGreaterThan(2);
    expect(await events(request)).toEqual(first);
    expect(await events(structuredClone(request))).toEqual(first);
  });

  it('says how many earlier messages it sees, system prompts aside', async () => {
    const { text } = await llm.complete({
      messages: [
        { role: 'system', content: 'Be brief.' },
        user('one'),
        { role: 'assistant', content: 'two' },
        user('three'),
      ],
    });
    expect(text).toContain('you said "three"');
    expect(text).toContain('I see 2 earlier messages in this conversation.');
  });

  it('counts tokens as whitespace-separated words: every message for the prompt, the answer for the completion', async () => {
    const messages: ChatMessage[] = [{ role: 'system', content: 'Be  brief.' }, user('How\nare you  doing?')];
    const completion = await llm.complete({ messages });
    const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
    expect(completion.usage).toEqual({
      promptTokens: 6,
      completionTokens: words(completion.text),
      totalTokens: 6 + words(completion.text),
    });
  });

  it('streams one word per delta, keeping the whitespace that follows it', async () => {
    const streamed = await events({ messages: [user('Hi   there')] });
    const deltas = streamed.flatMap((e) => (e.type === 'delta' ? [e.text] : []));
    for (const delta of deltas) expect(delta).toMatch(/^\S+\s*$/);
    expect(deltas.join('')).toContain('you said "Hi   there"');
  });

  describe('tool rule', () => {
    it('calls the tool named by /tool with its JSON arguments', async () => {
      const completion = await llm.complete({
        messages: [user('/tool lookup {"id": 3, "tags": ["a"]}')],
        tools: [tool('lookup'), tool('search_web')],
      });
      expect(completion.toolCalls).toEqual([{ id: 'call_1', name: 'lookup', arguments: { id: 3, tags: ['a'] } }]);
      expect(completion.text).toBe('');
      expect(completion.finishReason).toBe('tool_calls');
    });

    it('calls the tool named by /tool with {} when no arguments are given', async () => {
      const completion = await llm.complete({ messages: [user('/tool lookup')], tools: [tool('lookup')] });
      expect(completion.toolCalls).toEqual([{ id: 'call_1', name: 'lookup', arguments: {} }]);
    });

    it('calls search_web for "search for <rest>" and for "search: <rest>"', async () => {
      const tools = [tool('search_web')];
      const form1 = await llm.complete({ messages: [user('Could you search for cheap flights to Oslo')], tools });
      expect(form1.toolCalls).toEqual([
        { id: 'call_1', name: 'search_web', arguments: { query: 'cheap flights to Oslo' } },
      ]);
      const form2 = await llm.complete({ messages: [user('search: rust async runtimes')], tools });
      expect(form2.toolCalls).toEqual([
        { id: 'call_1', name: 'search_web', arguments: { query: 'rust async runtimes' } },
      ]);
    });

    it('numbers calls after those already in the conversation', async () => {
      const completion = await llm.complete({
        messages: [
          user('search: cats'),
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', name: 'search_web', arguments: { query: 'cats' } }],
          },
          { role: 'tool', toolCallId: 'call_1', name: 'search_web', content: 'Cats purr.' },
          { role: 'assistant', content: 'Cats purr.' },
          user('search: dogs'),
        ],
        tools: [tool('search_web')],
      });
      expect(completion.toolCalls).toEqual([{ id: 'call_2', name: 'search_web', arguments: { query: 'dogs' } }]);
    });

    it('calls nothing when the tool is not offered, and says why', async () => {
      const notOffered = await llm.complete({ messages: [user('/tool delete_all')], tools: [tool('lookup')] });
      expect(notOffered.toolCalls).toEqual([]);
      expect(notOffered.finishReason).toBe('stop');
      expect(notOffered.text).toContain('The tool delete_all is not offered here.');
      expect(notOffered.text).toContain('Tools offered: lookup');

      const noSearch = await llm.complete({ messages: [user('search for cats')], tools: [tool('lookup')] });
      expect(noSearch.toolCalls).toEqual([]);

      const noTools = await llm.complete({ messages: [user('/tool lookup {"id": 1}')] });
      expect(noTools.toolCalls).toEqual([]);
      expect(noTools.text).toMatch(/^Offline model: you said "\/tool lookup/);
    });

    it('calls nothing when the /tool arguments are not a JSON object', async () => {
      const completion = await llm.complete({ messages: [user('/tool lookup {"id": }')], tools: [tool('lookup')] });
      expect(completion.toolCalls).toEqual([]);
      expect(completion.text).toContain('The arguments for lookup are not a JSON object.');
    });

    it('calls nothing when the last message is not a user message', async () => {
      const completion = await llm.complete({
        messages: [user('search for cats'), { role: 'assistant', content: 'search for dogs' }],
        tools: [tool('search_web')],
      });
      expect(completion.toolCalls).toEqual([]);
      expect(completion.text).toMatch(/^Offline model: /);
    });

    it('after a tool result, answers in text quoting the result and the question', async () => {
      const completion = await llm.complete({
        messages: [
          user('search for the weather in Paris'),
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', name: 'search_web', arguments: { query: 'the weather in Paris' } }],
          },
          { role: 'tool', toolCallId: 'call_1', name: 'search_web', content: 'Sunny, 24 °C.' },
        ],
        tools: [tool('search_web')],
      });
      expect(completion.toolCalls).toEqual([]);
      expect(completion.finishReason).toBe('stop');
      expect(completion.text).toMatch(/^Offline model: the tool search_web returned "Sunny, 24 °C\."\./);
      expect(completion.text).toContain('You asked: "search for the weather in Paris".');
    });
  });

  it('stops after maxTokens words and reports finishReason length', async () => {
    const full = await llm.complete({ messages: [user('Tell me a long story')] });
    const cut = await llm.complete({ messages: [user('Tell me a long story')], maxTokens: 3 });
    expect(cut.finishReason).toBe('length');
    expect(cut.usage.completionTokens).toBe(3);
    expect(cut.text).toBe('Offline model: you');
    expect(full.text.startsWith(cut.text)).toBe(true);
    expect(full.finishReason).toBe('stop');
  });

  it('paced (OFFLINE_LLM_WORD_DELAY_MS), streams the same events, and an abort still lands within a pause', async () => {
    const request: CompletionRequest = { messages: [user('Take your time')], tools: [tool('calculator')] };
    const paced = createOfflineLlm({ wordDelayMs: 1 });
    const seen: LlmEvent[] = [];
    for await (const event of paced.stream(request)) seen.push(event);
    expect(seen).toEqual(await events(request));

    // A pause of a minute per word: only an abort that cuts the pause short ends this stream.
    const controller = new AbortController();
    const slow = createOfflineLlm({ wordDelayMs: 60_000 }).stream({ ...request, signal: controller.signal });
    const first = slow[Symbol.asyncIterator]().next();
    controller.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('quotes at most 200 characters of a long message', async () => {
    const long = 'x'.repeat(500);
    const { text } = await llm.complete({ messages: [user(long)] });
    expect(text).toContain(`"${'x'.repeat(200)}…"`);
    expect(text).not.toContain('x'.repeat(201));
  });
});
