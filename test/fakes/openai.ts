import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, serveOnLoopback } from '../helpers/http.js';

/**
 * A FAKE of a hosted OpenAI-compatible API (no such service can run here). It speaks the real wire format of
 * the endpoints the service uses — GET /v1/models, and POST /v1/chat/completions both as one `chat.completion`
 * JSON object and as server-sent `chat.completion.chunk` events (text word by word, tool calls as indexed
 * fragments whose arguments arrive in several pieces, a usage-only last chunk when `stream_options.include_usage`
 * asks for it, then `data: [DONE]`). It checks conversations as the real API does (every tool message answers an
 * earlier tool call, every tool call is answered) and rejects others with a 400.
 *
 * Tests choose how it behaves: a queue of scripted replies, a status to fail with (for every request, or for the
 * next `failTimes`), a delay before answering and between chunks; it records every request with its body.
 */
export interface FakeOpenAi {
  url: string;
  /** What GET /v1/models lists. */
  models: string[];
  /** Every request fails with this status while it is set (but see `failTimes`). */
  failWith: number | undefined;
  /** When set, only this many more requests fail; then `failWith` clears itself. */
  failTimes: number | undefined;
  /** The `retry-after` header (seconds or an HTTP date) sent with a 429, if any. */
  retryAfter: string | undefined;
  /**
   * The `retry-after-ms` header sent with a 429 or 5xx. The official client honours it over its own backoff,
   * so tests that retry do not wait for seconds. Default 1.
   */
  retryAfterMs: number | undefined;
  /** More headers sent with every failure (`x-should-retry`, say). */
  failHeaders: Record<string, string>;
  /** Chat-completion replies, answered in order; with the queue empty it answers "(fake) no scripted reply". */
  replies: ScriptedReply[];
  /** Milliseconds before a chat completion starts to answer (to exercise timeouts). Default 0. */
  delayMs: number;
  /** Milliseconds between streamed chunks (to abort or stall mid-stream). Default 0. */
  chunkDelayMs: number;
  requests: FakeRequest[];
  /** Streamed answers whose client went away before the last chunk: the model call was really stopped. */
  abandoned: number;
  close: () => Promise<void>;
}

/** One scripted chat-completion answer. */
export interface ScriptedReply {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  /**
   * Token counts to report. `null` sends none at all, as servers that ignore `include_usage` do. Default: prompt
   * tokens are the words of the messages, completion tokens the words of the answer.
   */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  /**
   * Streamed only: after the text, an error object in place of the rest of the answer, as the API sends when it
   * fails mid-answer (the stream then ends, without `[DONE]`).
   */
  streamError?: { message: string; type: string };
}

export interface ScriptedToolCall {
  /** Default `call_fake_<n>`. */
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as it is (to send malformed arguments). */
  arguments: Record<string, unknown> | string;
}

export interface FakeRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  /** The client's port: requests on one kept-alive connection share it. */
  remotePort: number | undefined;
  /** The parsed JSON body, for requests that have one. */
  body?: unknown;
}

interface WireMessage {
  role?: unknown;
  content?: unknown;
  tool_call_id?: unknown;
  tool_calls?: { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
}

interface WireRequest {
  model?: unknown;
  messages?: WireMessage[];
  tools?: { type?: unknown; function?: { name?: unknown } }[];
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
}

const ERROR_TYPES: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: 'Not permitted.' },
  404: { type: 'invalid_request_error', code: 'unknown_url', message: 'Unknown URL.' },
  429: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'You exceeded your current quota.' },
  500: { type: 'server_error', code: 'server_error', message: 'The server had an error.' },
};

const CREATED = 1_700_000_000;

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number, message?: string, headers: Record<string, string> = {}) {
  const error = ERROR_TYPES[status] ?? ERROR_TYPES[500]!;
  send(res, status, { error: { ...error, ...(message && { message }), param: null } }, headers);
}

function countWords(text: unknown): number {
  return typeof text === 'string' ? (text.match(/\S+/g)?.length ?? 0) : 0;
}

/** What the real API says about a request it will not serve, or undefined when it would serve it. */
function invalid(body: WireRequest): string | undefined {
  if (typeof body.model !== 'string') return "Missing required parameter: 'model'.";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "Missing required parameter: 'messages'.";
  for (const tool of body.tools ?? []) {
    if (tool.type !== 'function' || typeof tool.function?.name !== 'string') return 'Invalid tool definition.';
  }
  const unanswered = new Set<unknown>();
  for (const [i, message] of body.messages.entries()) {
    if (message.role !== 'tool' && unanswered.size > 0) {
      return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.";
    }
    switch (message.role) {
      case 'system':
      case 'developer':
      case 'user':
        if (typeof message.content !== 'string') return `Invalid 'messages[${i}].content'.`;
        break;
      case 'assistant':
        for (const call of message.tool_calls ?? []) {
          const fn = call.function;
          if (typeof call.id !== 'string' || call.type !== 'function' || typeof fn?.name !== 'string') {
            return `Invalid 'messages[${i}].tool_calls'.`;
          }
          if (typeof fn.arguments !== 'string')
            return `Invalid 'messages[${i}].tool_calls': arguments must be a string.`;
          unanswered.add(call.id);
        }
        break;
      case 'tool':
        if (!unanswered.delete(message.tool_call_id)) {
          return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
        }
        break;
      default:
        return `Invalid value for 'messages[${i}].role'.`;
    }
  }
  return unanswered.size > 0 ? 'Tool calls must each be answered by a tool message.' : undefined;
}

/** Starts the fake on an ephemeral loopback port, listing `models`. */
export async function startFakeOpenAi(models: string[] = ['gpt-4o-mini']): Promise<FakeOpenAi> {
  const fake: Omit<FakeOpenAi, 'url' | 'close'> = {
    models,
    failWith: undefined,
    failTimes: undefined,
    retryAfter: undefined,
    retryAfterMs: 1,
    failHeaders: {},
    replies: [],
    delayMs: 0,
    chunkDelayMs: 0,
    requests: [],
    abandoned: 0,
  };
  let completions = 0;
  let toolCallIds = 0;
  // Pending waits, ended on close so that no handler outlives the server.
  const waits = new Set<() => void>();
  const wait = (ms: number) =>
    ms <= 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            waits.delete(done);
            resolve();
          };
          const timer = setTimeout(done, ms);
          waits.add(done);
        });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const body = await readJsonBody(req, (text) => text);
    fake.requests.push({
      method: req.method ?? '',
      path,
      authorization: req.headers.authorization,
      remotePort: req.socket.remotePort,
      ...(body !== undefined && { body }),
    });

    if (fake.failWith) {
      const status = fake.failWith;
      if (fake.failTimes !== undefined && --fake.failTimes <= 0) {
        fake.failWith = undefined;
        fake.failTimes = undefined;
      }
      const headers: Record<string, string> = { ...fake.failHeaders };
      if (status === 429 && fake.retryAfter !== undefined) headers['retry-after'] = fake.retryAfter;
      if ((status === 429 || status >= 500) && fake.retryAfterMs !== undefined) {
        headers['retry-after-ms'] = String(fake.retryAfterMs);
      }
      // Unmasked on purpose (the real API masks most of it), so tests can show the service never repeats it.
      const message =
        status === 401
          ? `Incorrect API key provided: ${req.headers.authorization?.replace(/^Bearer /, '')}.`
          : undefined;
      sendError(res, status, message, headers);
      return;
    }

    if (req.method === 'GET' && path === '/v1/models') {
      send(res, 200, {
        object: 'list',
        data: fake.models.map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'fake' })),
      });
      return;
    }

    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const request = (typeof body === 'object' && body !== null ? body : {}) as WireRequest;
      const problem = invalid(request);
      if (problem) {
        sendError(res, 400, problem);
        return;
      }
      await wait(fake.delayMs);
      if (res.destroyed) return;
      await answer(request, fake.replies.shift() ?? { text: '(fake) no scripted reply' }, res);
      return;
    }

    sendError(res, 404, `Unknown ${path}`);
  }

  async function answer(request: WireRequest, reply: ScriptedReply, res: ServerResponse): Promise<void> {
    const id = `chatcmpl-fake-${++completions}`;
    const model = request.model as string;
    const text = reply.text ?? '';
    const calls = (reply.toolCalls ?? []).map((call) => ({
      id: call.id ?? `call_fake_${++toolCallIds}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    const finishReason = reply.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const counted = {
      prompt_tokens: (request.messages ?? []).reduce((n, m) => n + countWords(m.content), 0),
      completion_tokens: countWords(text) + calls.reduce((n, c) => n + countWords(`${c.name} ${c.arguments}`), 0),
    };
    const usage = reply.usage === undefined ? counted : reply.usage;
    const withTotal = (u: { prompt_tokens: number; completion_tokens: number }) => ({
      ...u,
      total_tokens: u.prompt_tokens + u.completion_tokens,
    });
    const common = { id, created: CREATED, model, system_fingerprint: 'fp_fake' };

    if (request.stream !== true) {
      send(res, 200, {
        ...common,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text === '' && calls.length > 0 ? null : text,
              refusal: null,
              ...(calls.length > 0 && {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage: withTotal(usage ?? counted),
      });
      return;
    }

    const includeUsage = request.stream_options?.include_usage === true;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      ...common,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      // With include_usage, every chunk but the last carries `usage: null`.
      ...(includeUsage && { usage: null }),
    });
    const words = (text.match(/\s*\S+|\s+$/g) ?? []).map((word) => chunk({ content: word }));
    if (reply.streamError) {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      for (const frame of words) res.write(`data: ${JSON.stringify(frame)}\n\n`);
      res.end(`data: ${JSON.stringify({ error: { ...reply.streamError, param: null, code: null } })}\n\n`);
      return;
    }
    const frames: unknown[] = [
      chunk({ role: 'assistant', content: calls.length > 0 && text === '' ? null : '', refusal: null }),
      ...words,
      ...calls.flatMap((call, index) => [
        chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
        ...pieces(call.arguments).map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] })),
      ]),
      chunk({}, finishReason),
      ...(includeUsage && usage
        ? [{ ...common, object: 'chat.completion.chunk', choices: [], usage: withTotal(usage) }]
        : []),
    ];

    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    for (const [i, frame] of frames.entries()) {
      if (i > 0) await wait(fake.chunkDelayMs);
      if (res.destroyed) {
        fake.abandoned += 1;
        return;
      }
      res.write(`data: ${JSON.stringify(frame)}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  }

  const served = await serveOnLoopback((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(error));
      else res.destroy();
    });
  });
  return Object.assign(fake, {
    url: `${served.url}/v1`,
    close: async () => {
      for (const done of [...waits]) done();
      await served.close();
    },
  });
}

/** Splits tool-call arguments into three pieces, as the real API streams them in several fragments. */
function pieces(args: string): string[] {
  const size = Math.max(1, Math.ceil(args.length / 3));
  const out: string[] = [];
  for (let i = 0; i < args.length; i += size) out.push(args.slice(i, i + size));
  return out;
}
