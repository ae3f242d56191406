import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ChatMessage,
  type LlmEvent,
  type LlmProvider,
  type ToolSpec,
  usageOfAborted,
} from '../../src/adapters/llm/port.js';

/** What the next request should be answered with, for a provider whose backend a test scripts. */
export type ScriptedAnswer = { text: string } | { toolCalls: { name: string; arguments: Record<string, unknown> }[] };

/** A provider under test; `script` queues the next answer of a scripted backend. */
export interface LlmHarness {
  llm: LlmProvider;
  script: (answer: ScriptedAnswer) => void;
  cleanup: () => Promise<void>;
}

const SEARCH_WEB: ToolSpec = {
  name: 'search_web',
  description: 'Searches the web.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

async function events(stream: AsyncIterable<LlmEvent>): Promise<LlmEvent[]> {
  const seen: LlmEvent[] = [];
  for await (const event of stream) seen.push(event);
  return seen;
}

/**
 * What every LlmProvider must do. Providers answer by their own rules (the offline model) or as a test scripts
 * them (a fake endpoint): every case sends an input the offline model's rule answers in a given shape — text,
 * or a call of `search_web` — and scripts that same shape, so one suite fits both.
 */
export function llmContract(name: string, make: () => Promise<LlmHarness>): void {
  describe(`LLM provider contract: ${name}`, () => {
    let harness: LlmHarness;

    beforeEach(async () => {
      harness = await make();
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    it('streams text in pieces that concatenate to what complete() returns', async () => {
      const messages: ChatMessage[] = [{ role: 'user', content: 'Hello there, how are you today?' }];
      const text = 'I am fine, thank you for asking.';
      harness.script({ text });
      harness.script({ text });
      const streamed = await events(harness.llm.stream({ messages }));
      const deltas = streamed.flatMap((e) => (e.type === 'delta' ? [e.text] : []));
      expect(deltas.length).toBeGreaterThan(1);
      const completion = await harness.llm.complete({ messages });
      expect(deltas.join('')).toBe(completion.text);
      expect(completion.text).not.toBe('');
      expect(completion).toMatchObject({ toolCalls: [], finishReason: 'stop' });
    });

    it('ends with exactly one done event whose usage adds up', async () => {
      harness.script({ text: 'A short answer.' });
      const streamed = await events(
        harness.llm.stream({
          messages: [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Say something short.' },
          ],
        }),
      );
      const done = streamed.at(-1);
      expect(streamed.filter((e) => e.type === 'done')).toHaveLength(1);
      expect(done).toMatchObject({ type: 'done', finishReason: 'stop' });
      if (done?.type !== 'done') return;
      const { promptTokens, completionTokens, totalTokens } = done.usage;
      expect(Number.isInteger(promptTokens) && Number.isInteger(completionTokens)).toBe(true);
      expect(promptTokens).toBeGreaterThan(0);
      expect(completionTokens).toBeGreaterThan(0);
      expect(totalTokens).toBe(promptTokens + completionTokens);
    });

    it('calls an offered tool that the conversation asks for, with parsed arguments', async () => {
      const request = {
        messages: [
          { role: 'system', content: 'Use tools when they help.' },
          { role: 'user', content: 'Please search for the weather in Paris' },
        ] satisfies ChatMessage[],
        tools: [SEARCH_WEB],
      };
      const call = { name: 'search_web', arguments: { query: 'the weather in Paris' } };
      harness.script({ toolCalls: [call] });
      harness.script({ toolCalls: [call] });

      const streamed = await events(harness.llm.stream(request));
      expect(streamed.map((e) => e.type).slice(-2)).toEqual(['tool_calls', 'done']);
      const calls = streamed.find((e) => e.type === 'tool_calls');
      expect(calls).toEqual({ type: 'tool_calls', calls: [{ id: expect.stringMatching(/\S/) as unknown, ...call }] });
      expect(streamed.at(-1)).toMatchObject({ type: 'done', finishReason: 'tool_calls' });

      const completion = await harness.llm.complete(request);
      expect(completion.toolCalls).toEqual([{ id: expect.stringMatching(/\S/) as unknown, ...call }]);
      expect(completion.finishReason).toBe('tool_calls');
    });

    it('answers in text after a tool result, even with tools still offered', async () => {
      harness.script({ text: 'Cats are small domesticated felines.' });
      const completion = await harness.llm.complete({
        messages: [
          { role: 'user', content: 'search for cats' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', name: 'search_web', arguments: { query: 'cats' } }],
          },
          { role: 'tool', toolCallId: 'call_1', name: 'search_web', content: 'Cats are small domesticated felines.' },
        ],
        tools: [SEARCH_WEB],
      });
      expect(completion.toolCalls).toEqual([]);
      expect(completion.text).not.toBe('');
      expect(completion.finishReason).toBe('stop');
    });

    it('accepts messages of every role in one conversation', async () => {
      harness.script({ text: 'You are welcome.' });
      const completion = await harness.llm.complete({
        messages: [
          { role: 'system', content: 'You are helpful.' },
          { role: 'user', content: 'search: rust async' },
          {
            role: 'assistant',
            content: 'Let me look that up.',
            toolCalls: [{ id: 'call_1', name: 'search_web', arguments: { query: 'rust async' } }],
          },
          { role: 'tool', toolCallId: 'call_1', name: 'search_web', content: 'Async Rust uses futures.' },
          { role: 'assistant', content: 'Async Rust uses futures.' },
          { role: 'user', content: 'Thanks!' },
        ],
        tools: [SEARCH_WEB],
      });
      expect(completion.text).not.toBe('');
      expect(completion.finishReason).toBe('stop');
    });

    it('stops streaming with an AbortError when the caller aborts, which tells what the call used', async () => {
      const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
      harness.script({ text: words });
      const controller = new AbortController();
      const received: LlmEvent[] = [];
      const consume = async () => {
        for await (const event of harness.llm.stream({
          messages: [{ role: 'user', content: words }],
          signal: controller.signal,
        })) {
          received.push(event);
          controller.abort();
        }
      };
      const error = await consume().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toMatchObject({ name: 'AbortError' });
      expect(received).toHaveLength(1);
      expect(received[0]?.type).toBe('delta');
      // The prompt was read and one piece of the answer written: the provider's count, or its estimate.
      const used = usageOfAborted(error);
      expect(used?.promptTokens).toBeGreaterThan(0);
      expect(used?.completionTokens).toBeGreaterThan(0);
      expect(used?.totalTokens).toBe(used!.promptTokens + used!.completionTokens);
    });

    it('rejects at once with an AbortError when the signal is already aborted', async () => {
      harness.script({ text: 'Never sent.' });
      const request = {
        messages: [{ role: 'user', content: 'Hi' }] satisfies ChatMessage[],
        signal: AbortSignal.abort(),
      };
      await expect(harness.llm.complete(request)).rejects.toMatchObject({ name: 'AbortError' });
    });
  });
}
