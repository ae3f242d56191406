import { setTimeout as sleep } from 'node:timers/promises';
import { offlineLlmHealthCheck } from './health.js';
import type { ChatMessage, CompletionRequest, LlmEvent, LlmProvider, ToolCall, ToolSpec } from './port.js';
import { collectCompletion, throwIfAborted } from './stream.js';

/**
 * The offline model: a deterministic stand-in that runs in-process, so the service works (and its agent loop
 * can be exercised end to end) with no LLM configured. It is no language model, and says so: every text answer
 * starts with `Offline model:`.
 *
 * **Answers.** The same request always yields the same events. The answer quotes the last message, says how
 * many earlier messages (system prompts aside) it sees, and, when the last message is a tool result, quotes
 * that result and the question that led to it. It is streamed word by word — each word, with the whitespace
 * that follows it, is one `delta` — and it yields to the event loop between words so that an abort lands
 * promptly (the stream then rejects with an `AbortError`).
 *
 * **Tool rule.** Only when the request offers tools and the last message is a user message:
 * 1. if the (trimmed) message matches `^/tool\s+(\S+)\s*(\{.*\})?$` (the JSON may span lines) and that tool is
 *    offered, it calls the tool with the JSON object (or `{}` when none is given);
 * 2. otherwise, if the message contains `search for <rest>` (any case) or starts with `search:` and a tool
 *    named `search_web` is offered, it calls `search_web` with `{ query: <rest> }`;
 * 3. otherwise it answers in text, naming the offered tools.
 *
 * A call's id is `call_<n>`, where n counts the tool calls already in the conversation, so ids are unique within
 * it and the same on every run. After a tool result it always answers in text, never with a new call.
 *
 * **Tokens.** A token is a whitespace-separated word. Prompt tokens are the words of every message's content;
 * completion tokens are the words streamed, or for a tool call the words of `<name> <JSON arguments>`. A stream
 * the caller stops rejects with an AbortError that counts the prompt and the words streamed until then.
 * `maxTokens` cuts a text answer after that many words and reports finishReason `length`; it does not apply to
 * tool calls.
 *
 * **Pace.** `wordDelayMs` (`OFFLINE_LLM_WORD_DELAY_MS`, default 0) waits that long before each word and before a
 * tool call, so that an answer takes a known time to stream (for demonstrations, and for tests of what happens
 * while one is in flight). It changes when events come, never which; an abort still lands at once.
 */
export function createOfflineLlm(options: { wordDelayMs?: number } = {}): LlmProvider {
  const pace = options.wordDelayMs ?? 0;
  return {
    provider: 'offline',
    model: 'offline',
    stream: (request) => streamOffline(request, pace),
    complete: (request) => collectCompletion(streamOffline(request, pace)),
    healthCheck: () => offlineLlmHealthCheck(),
  };
}

const TOOL_COMMAND = /^\/tool\s+(\S+)\s*(\{.*\})?$/s;
const SEARCH_PREFIX = /^search:\s*(.+)$/is;
const SEARCH_FOR = /\bsearch for\s+(.+)$/is;
const SEARCH_TOOL = 'search_web';
/** Long quotes are cut so that a pasted document does not come back whole. */
const QUOTE_LIMIT = 200;

type Answer = { kind: 'tool'; call: ToolCall } | { kind: 'text'; text: string };

async function* streamOffline(request: CompletionRequest, pace: number): AsyncGenerator<LlmEvent> {
  const { signal } = request;
  throwIfAborted(signal);
  const promptTokens = request.messages.reduce((sum, message) => sum + countWords(message.content), 0);
  const answer = decide(request.messages, request.tools ?? []);

  if (answer.kind === 'tool') {
    const completionTokens = countWords(`${answer.call.name} ${JSON.stringify(answer.call.arguments)}`);
    await nextWord(pace, signal);
    throwIfAborted(signal, usage(promptTokens, 0));
    yield { type: 'tool_calls', calls: [answer.call] };
    throwIfAborted(signal, usage(promptTokens, completionTokens));
    yield { type: 'done', usage: usage(promptTokens, completionTokens), finishReason: 'tool_calls' };
    return;
  }

  const words = answer.text.match(/\S+\s*/g) ?? [];
  const limit = request.maxTokens ?? Number.POSITIVE_INFINITY;
  const kept = words.length > limit ? words.slice(0, Math.max(0, limit)) : words;
  for (const [i, word] of kept.entries()) {
    await nextWord(pace, signal);
    // Stopped, the call used the prompt and the words streamed.
    throwIfAborted(signal, usage(promptTokens, i));
    // A cut answer should not end in the space that separated it from the word that was dropped.
    yield { type: 'delta', text: i === kept.length - 1 && kept.length < words.length ? word.trimEnd() : word };
    throwIfAborted(signal, usage(promptTokens, i + 1));
  }
  yield {
    type: 'done',
    usage: usage(promptTokens, kept.length),
    finishReason: kept.length < words.length ? 'length' : 'stop',
  };
}

function decide(messages: ChatMessage[], tools: ToolSpec[]): Answer {
  const last = messages.at(-1);
  const earlier = messages.slice(0, -1).filter((m) => m.role !== 'system').length;
  const seen = `I see ${earlier} earlier ${earlier === 1 ? 'message' : 'messages'} in this conversation.`;
  const disclaimer = 'No real model is configured (set LLM_PROVIDER=openai for one).';

  if (last === undefined) return { kind: 'text', text: `Offline model: there is no message to answer. ${disclaimer}` };

  if (last.role === 'tool') {
    const question = messages.findLast((m) => m.role === 'user');
    const asked = question ? ` You asked: "${quote(question.content)}".` : '';
    return {
      kind: 'text',
      text: `Offline model: the tool ${last.name} returned "${quote(last.content)}".${asked} ${seen} ${disclaimer}`,
    };
  }

  if (last.role !== 'user') {
    return {
      kind: 'text',
      text: `Offline model: the last message is not a user's, so there is nothing to answer. ${seen}`,
    };
  }

  const offered = new Set(tools.map((t) => t.name));
  const content = last.content.trim();
  const command = TOOL_COMMAND.exec(content);
  const nextId = `call_${countToolCalls(messages) + 1}`;
  let toolNote = '';

  if (offered.size > 0 && command) {
    const name = command[1]!;
    const args = command[2] === undefined ? {} : parseObject(command[2]);
    if (!offered.has(name)) toolNote = ` The tool ${name} is not offered here.`;
    else if (args === undefined) toolNote = ` The arguments for ${name} are not a JSON object.`;
    else return { kind: 'tool', call: { id: nextId, name, arguments: args } };
  }
  if (offered.has(SEARCH_TOOL)) {
    const query = (SEARCH_PREFIX.exec(content) ?? SEARCH_FOR.exec(content))?.[1]?.trim();
    if (query) return { kind: 'tool', call: { id: nextId, name: SEARCH_TOOL, arguments: { query } } };
  }

  const toolList =
    offered.size === 0 ? '' : ` Tools offered: ${[...offered].join(', ')}; send "/tool <name> {json}" to call one.`;
  return {
    kind: 'text',
    text: `Offline model: you said "${quote(last.content)}".${toolNote} ${seen}${toolList} ${disclaimer}`,
  };
}

function parseObject(json: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function countToolCalls(messages: ChatMessage[]): number {
  return messages.reduce((n, m) => n + (m.role === 'assistant' ? (m.toolCalls?.length ?? 0) : 0), 0);
}

function quote(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > QUOTE_LIMIT ? `${trimmed.slice(0, QUOTE_LIMIT)}…` : trimmed;
}

function countWords(text: string): number {
  return text.match(/\S+/g)?.length ?? 0;
}

function usage(promptTokens: number, completionTokens: number) {
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/**
 * Lets timers and I/O run between words, so that an abort (or anything else) is not starved by a long answer; with
 * a pace, waits that long too, or until the abort.
 */
async function nextWord(pace: number, signal: AbortSignal | undefined): Promise<void> {
  if (pace > 0) await sleep(pace, undefined, signal && { signal }).catch(() => undefined);
  else await new Promise((resolve) => setImmediate(resolve));
}
