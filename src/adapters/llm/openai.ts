import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { CommonErrorCode, InternalError, RateLimitError, ServiceUnavailableError } from '../../errors.js';
import { followSignals } from '../../signals.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../version.js';
import { type CircuitBreaker, CircuitOpenError } from '../breaker/breaker.js';
import { openAiLlmHealthCheck } from './health.js';
import type { IncomingMessage } from 'node:http';
import { createHttpPost, textChunks } from './http-post.js';
import { EventStreamParser } from './server-sent.js';
import { loadedOpenAiSdk } from './openai-sdk.js';
import { postCompletion } from './openai-request.js';
import { NO_USAGE, abortError, collectCompletion, estimateTokens, throwIfAborted } from './stream.js';
import type {
  ChatMessage,
  CompletionRequest,
  FinishReason,
  LlmEvent,
  LlmProvider,
  ToolCall,
  ToolSpec,
  Usage,
} from './port.js';

/** How to reach an OpenAI-compatible chat-completions endpoint. */
export interface OpenAiLlmConfig {
  /** The API root, `/v1` included: `https://api.openai.com/v1`, `http://localhost:11434/v1`… */
  baseUrl: string;
  /** Sent as a bearer token. A local server without authentication may leave it unset. */
  apiKey?: string;
  model: string;
  /** How long to wait for the answer to start, and then for each next streamed chunk. Default 60 s. */
  timeoutMs?: number;
  /** Retries, with exponential backoff, of connection failures, timeouts, 408, 409, 429 and 5xx. Default 2. */
  maxRetries?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
/** What we tell clients to wait when a rate-limited provider does not say. */
const DEFAULT_RETRY_AFTER_SECONDS = 30;

/**
 * Whether a request failed for lack of the provider (no connection, no answer in time, a 5xx after the retries),
 * not because of the request, the key, a rate limit or the caller's abort: what opens the breaker.
 */
export function isLlmOutage(error: unknown): boolean {
  const sdk = loadedOpenAiSdk();
  if (!sdk || error instanceof sdk.APIUserAbortError) return false;
  if (error instanceof sdk.APIConnectionError) return true;
  return error instanceof sdk.APIError && error.status !== undefined && error.status >= 500;
}

/**
 * A chat model behind any OpenAI-compatible endpoint, spoken to with the official `openai` client's rules and
 * errors (`openai-request.ts`) and its types. Every request streams (`stream_options.include_usage`, so the last
 * chunk carries usage; a server that ignores the option yields usage of zeros). Tools are offered in the function
 * format with `tool_choice: 'auto'`; streamed tool-call fragments are assembled by index and emitted once the
 * stream ends.
 *
 * Arguments that are not a JSON object become `{}` instead of failing the turn: the tool then reports its
 * missing arguments back to the model, which can try again, where an error would end the whole conversation
 * turn. `maxTokens` is sent as `max_completion_tokens` (OpenAI's reasoning models reject `max_tokens`); a
 * `content_filter` stop is reported as `stop`, and a refusal is streamed as text.
 *
 * Failures become service errors whose messages are safe to show (never the key, the provider's message or
 * the endpoint): a rejected key → ServiceUnavailableError; a rate limit that outlived the retries →
 * RateLimitError with the provider's `retry-after` (else 30 s); a timeout or an unreachable endpoint →
 * ServiceUnavailableError; a request the provider refuses (4xx) → InternalError; the caller's abort → the port's
 * AbortError, whose usage is an estimate (a stopped stream never gets to its usage chunk): the prompt once it was
 * sent, and what had come of the answer. With a breaker, a provider known to be down fails each turn at once
 * instead of after the timeout and retries.
 */
export function createOpenAiLlm(config: OpenAiLlmConfig, options: { breaker?: CircuitBreaker } = {}): LlmProvider {
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const policy = { timeoutMs, maxRetries: config.maxRetries ?? DEFAULT_MAX_RETRIES };
  const send = createHttpPost();
  const url = new URL(`${config.baseUrl.replace(/\/+$/, '')}/chat/completions`);
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'User-Agent': `${SERVICE_NAME}/${SERVICE_VERSION}`,
    // Keyless local servers need none.
    ...(config.apiKey !== undefined && { Authorization: `Bearer ${config.apiKey}` }),
  };
  const start: StartStream = async (body, { signal }) => {
    const post = () => postCompletion(send, { url, headers, body: JSON.stringify(body), signal }, policy);
    // The answer's body is read here, as it streams.
    return chunksOf(await (options.breaker ? options.breaker.run(post) : post()));
  };
  const stream = (request: CompletionRequest) => streamOpenAi(start, config.model, timeoutMs, request);
  return {
    provider: 'openai',
    model: config.model,
    stream,
    complete: (request) => collectCompletion(stream(request)),
    healthCheck: () =>
      openAiLlmHealthCheck({ provider: 'openai', baseUrl: config.baseUrl, apiKey: config.apiKey, model: config.model }),
  };
}

interface CallFragments {
  id: string;
  name: string;
  args: string;
}

/**
 * The chunks of a streamed completion, read from its body as it comes, those of each read together (the client's
 * own reader stacked four async generators and built log lines for every chunk). Its rules are kept: `[DONE]`
 * ends the answer (what follows is read and ignored, so that the connection stays reusable), and a chunk that
 * carries an `error` is the provider failing mid-answer. A consumer that stops early destroys the response.
 */
async function* chunksOf(response: IncomingMessage): AsyncGenerator<ChatCompletionChunk[]> {
  const parser = new EventStreamParser();
  let done = false;
  const chunksIn = (events: { data: string }[]): ChatCompletionChunk[] => {
    const chunks: ChatCompletionChunk[] = [];
    for (const { data } of events) {
      if (done) continue;
      if (data.startsWith('[DONE]')) {
        done = true;
        continue;
      }
      const chunk = JSON.parse(data) as (ChatCompletionChunk & { error?: Record<string, unknown> }) | null;
      // Thrown as they come: toServiceError, where the caller reads the stream, maps them once like any other.
      if (typeof chunk !== 'object' || chunk === null) throw new TypeError('a streamed chunk that is not an object');
      if (chunk.error) throw new ErrorChunk(chunk.error);
      chunks.push(chunk);
    }
    return chunks;
  };
  for await (const text of textChunks(response)) {
    const chunks = chunksIn(parser.feed(text));
    if (chunks.length > 0) yield chunks;
  }
  const last = chunksIn(parser.end());
  if (last.length > 0) yield last;
}

/** An error object the provider sent in place of the rest of its answer. */
class ErrorChunk extends Error {
  constructor(readonly error: Record<string, unknown>) {
    super('the provider failed mid-answer');
  }
}

/** Sends one streaming chat-completion request. */
type StartStream = (
  body: ChatCompletionCreateParamsStreaming,
  options: { signal: AbortSignal },
) => Promise<AsyncIterable<ChatCompletionChunk[]>>;

async function* streamOpenAi(
  start: StartStream,
  model: string,
  timeoutMs: number,
  request: CompletionRequest,
): AsyncGenerator<LlmEvent> {
  const { signal } = request;
  throwIfAborted(signal);
  // Our own controller stops the request both when the caller aborts and when the stream goes quiet.
  const controller = new AbortController();
  const unfollow = followSignals(controller, [signal]);
  let stalled = false;
  let watchdog: NodeJS.Timeout | undefined;
  const calls = new Map<number, CallFragments>();
  let usage: Usage | undefined;
  let reason: ChatCompletionChunk.Choice['finish_reason'] = null;
  let answered = '';
  /** What the call used until now (it was sent): the provider's count once it came, else an estimate. */
  const usedSoFar = (): Usage => {
    if (usage) return usage;
    const promptTokens = estimateTokens(promptText(request));
    const fragments = [...calls.values()].map((call) => `${call.name} ${call.args}`).join(' ');
    const completionTokens = estimateTokens(answered + fragments);
    return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  };

  try {
    let batches: AsyncIterator<ChatCompletionChunk[]>;
    try {
      const response = await start(toRequestBody(model, request), { signal: controller.signal });
      batches = response[Symbol.asyncIterator]();
    } catch (error) {
      throw toServiceError(error, signal, timeoutMs);
    }

    for (;;) {
      let next: IteratorResult<ChatCompletionChunk[]>;
      // Timed only while we wait on the provider, not while our consumer is busy with the last delta.
      watchdog = setTimeout(() => {
        stalled = true;
        controller.abort();
      }, timeoutMs);
      try {
        next = await batches.next();
      } catch (error) {
        // The watchdog's abort ends the stream with an error or quietly, as the fetch underneath has it.
        if (stalled && !signal?.aborted) throw stalledFor(timeoutMs);
        throw toServiceError(error, signal, timeoutMs);
      } finally {
        clearTimeout(watchdog);
      }
      // The client may end an aborted stream quietly, as if it had finished; say why it ended.
      throwIfAborted(signal);
      if (stalled) throw stalledFor(timeoutMs);
      if (next.done) break;

      for (const chunk of next.value) {
        if (chunk.usage) {
          const { prompt_tokens: promptTokens, completion_tokens: completionTokens } = chunk.usage;
          usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
        }
        const choice = chunk.choices[0];
        if (!choice) continue;
        reason = choice.finish_reason ?? reason;
        for (const fragment of choice.delta.tool_calls ?? []) {
          const call = calls.get(fragment.index) ?? { id: '', name: '', args: '' };
          calls.set(fragment.index, call);
          if (fragment.id) call.id = fragment.id;
          if (fragment.function?.name) call.name = fragment.function.name;
          call.args += fragment.function?.arguments ?? '';
        }
        for (const text of [choice.delta.content, choice.delta.refusal]) {
          if (!text) continue;
          answered += text;
          yield { type: 'delta', text };
          throwIfAborted(signal);
        }
      }
    }

    const toolCalls: ToolCall[] = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        // Some compatible servers omit ids; the tool message still needs one to answer to.
        id: call.id || `call_${index}`,
        name: call.name,
        arguments: parseArguments(call.args),
      }));
    if (toolCalls.length > 0) yield { type: 'tool_calls', calls: toolCalls };
    yield { type: 'done', usage: usage ?? NO_USAGE, finishReason: toFinishReason(reason, toolCalls.length > 0) };
  } catch (error) {
    // However it was reported, a request the caller stopped ends in the port's AbortError, with what it used.
    if (signal?.aborted) throw abortError(signal, usedSoFar());
    throw error;
  } finally {
    unfollow();
    // Closes the HTTP stream when the consumer stopped early; a no-op once it has ended.
    controller.abort();
  }
}

/** The text of a request as the model reads it (messages, the calls in them, the tools offered), for estimates. */
function promptText(request: CompletionRequest): string {
  const messages = request.messages.map((message) =>
    message.role === 'assistant' && message.toolCalls?.length
      ? `${message.content} ${JSON.stringify(message.toolCalls)}`
      : message.content,
  );
  return [...messages, ...(request.tools ?? []).map((tool) => JSON.stringify(toOpenAiTool(tool)))].join('\n');
}

function toRequestBody(model: string, request: CompletionRequest): ChatCompletionCreateParamsStreaming {
  const tools = request.tools ?? [];
  return {
    model: request.model ?? model,
    messages: request.messages.map(toOpenAiMessage),
    stream: true,
    stream_options: { include_usage: true },
    // OpenAI rejects tool_choice without tools.
    ...(tools.length > 0 && { tools: tools.map(toOpenAiTool), tool_choice: 'auto' as const }),
    ...(request.maxTokens !== undefined && { max_completion_tokens: request.maxTokens }),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
  };
}

function toOpenAiMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'assistant':
      if (!message.toolCalls?.length) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        // A turn that only called tools has no text; the API wants null there rather than "".
        content: message.content === '' ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        })),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

function toOpenAiTool(tool: ToolSpec): ChatCompletionTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

function parseArguments(json: string): Record<string, unknown> {
  if (json.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function toFinishReason(reason: ChatCompletionChunk.Choice['finish_reason'], hasToolCalls: boolean): FinishReason {
  if (reason === 'length') return 'length';
  // Some compatible servers say `stop` after tool calls; the calls are what the agent loop must act on.
  return hasToolCalls ? 'tool_calls' : 'stop';
}

/** A stream that went quiet for longer than the timeout. */
const stalledFor = (timeoutMs: number) =>
  new ServiceUnavailableError(`LLM provider stopped streaming for ${timeoutMs} ms`, {
    code: CommonErrorCode.ServiceUnavailable,
  });

/**
 * Maps what the client throws to a service error. Causes are rebuilt from the status, code and request id:
 * a provider's message may quote the key or the prompt, and causes end up in logs.
 */
function toServiceError(error: unknown, signal: AbortSignal | undefined, timeoutMs: number): Error {
  // However the client reported it, a request the caller aborted ends in the caller's AbortError.
  if (signal?.aborted) return abortError(signal);
  if (error instanceof CircuitOpenError) return error;
  if (error instanceof ErrorChunk) {
    const code = typeof error.error.code === 'string' ? error.error.code : undefined;
    return new ServiceUnavailableError('LLM provider failed to answer', {
      code: CommonErrorCode.ServiceUnavailable,
      cause: safeCause({ status: undefined, code, requestID: undefined }),
    });
  }
  const sdk = loadedOpenAiSdk();
  if (!sdk) return unreadable(error);
  if (error instanceof sdk.AuthenticationError || error instanceof sdk.PermissionDeniedError) {
    return new ServiceUnavailableError('LLM provider rejected the API key', {
      code: CommonErrorCode.ServiceUnavailable,
      cause: safeCause(error),
    });
  }
  if (error instanceof sdk.RateLimitError) {
    return new RateLimitError('LLM provider rate limit reached; try again later', retryAfterSeconds(error.headers), {
      cause: safeCause(error),
    });
  }
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return new ServiceUnavailableError(`LLM provider did not answer within ${timeoutMs} ms`, {
      code: CommonErrorCode.ServiceUnavailable,
    });
  }
  if (error instanceof sdk.APIConnectionError) {
    return new ServiceUnavailableError('LLM provider is unreachable', {
      code: CommonErrorCode.ServiceUnavailable,
      cause: error,
    });
  }
  if (error instanceof sdk.APIError) {
    // 5xx: the retries did not help.
    if (error.status === undefined || error.status >= 500) {
      return new ServiceUnavailableError('LLM provider failed to answer', {
        code: CommonErrorCode.ServiceUnavailable,
        cause: safeCause(error),
      });
    }
    return new InternalError(`LLM provider refused the request (status ${error.status})`, {
      code: CommonErrorCode.Internal,
      cause: safeCause(error),
    });
  }
  return unreadable(error);
}

function unreadable(error: unknown): Error {
  return new InternalError('LLM provider sent a response that could not be read', {
    code: CommonErrorCode.Internal,
    cause: error,
  });
}

/** The parts of the client's APIError that are safe to log. */
interface ApiErrorFacts {
  status: number | undefined;
  code: string | null | undefined;
  requestID: string | null | undefined;
}

function safeCause(error: ApiErrorFacts): Error {
  const parts = [`status ${error.status ?? 'none'}`];
  if (error.code) parts.push(`code ${error.code}`);
  if (error.requestID) parts.push(`request ${error.requestID}`);
  return new Error(`OpenAI-compatible API error (${parts.join(', ')})`);
}

/** `retry-after` in seconds or as an HTTP date; at least 1 s, since retrying at once already failed. */
function retryAfterSeconds(headers: Headers | undefined): number {
  const value = headers?.get('retry-after')?.trim();
  if (!value) return DEFAULT_RETRY_AFTER_SECONDS;
  const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  return Number.isNaN(seconds) ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil(seconds));
}
