import { JSONRPCMessageSchema, JSONRPCRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import {
  type JsonSchema,
  JsonObject,
  type JsonValue,
  MALFORMED_JSON,
  REPLAY_HINT,
  RawToken,
  deepNesting,
  fromPlain,
  fuzzOptions,
  hostileJson,
  hostileString,
  jsonText,
  mutateOne,
  sampleOf,
} from '../helpers/fuzz.js';
import { MODERN_REVISION, TOOL_NAMES, socketUrl } from '../helpers/mcp.js';

/**
 * Every MCP method, with fuzzed params and malformed JSON-RPC envelopes (no `jsonrpc`, ids of every type, huge
 * ids, batches, text that is not JSON), on every wire: streamable HTTP (stateful, stateless, and the 2026-07-28
 * revision), legacy SSE, WebSocket, and the REST-style endpoints. Invariants: the answer is a JSON-RPC error of the
 * protocol's (never -32603, the server's own failure), a result (a tool error included) or a 4xx in the MCP shape;
 * never a 5xx, never silence where an answer is owed, never a hang; and the same session or socket still answers a
 * good request afterwards.
 *
 * FUZZ_RUNS=100 FUZZ_SEED=<n> npx vitest run test/security/fuzz-mcp.test.ts runs longer or other cases.
 */

const RUNS = 12;
const HANG_MS = 15_000;
const BOTH = 'application/json, text/event-stream';
const LEGACY_VERSION = '2025-06-18';
/** Error codes a refusal of the protocol may carry: parse, invalid request, method, params, and the SDKs' own. */
const REFUSAL_CODES = new Set([-32700, -32600, -32601, -32602, -32000, -32001, -32002, -32020, -32042]);

type Message = Record<string, unknown>;

/** A valid request of each method: the base the fuzz breaks one field of. */
function validParams(tools: Map<string, JsonSchema>): Record<string, JsonValue> {
  const params: Record<string, unknown> = {
    initialize: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
    ping: {},
    'tools/list': {},
    'resources/list': {},
    'resources/read': { uri: 'agent-service://server' },
    'resources/templates/list': {},
    'prompts/list': {},
    'prompts/get': { name: 'research_topic', arguments: { topic: 'fuzz', depth: 'thorough' } },
    'logging/setLevel': { level: 'info' },
    'completion/complete': {
      ref: { type: 'ref/prompt', name: 'research_topic' },
      argument: { name: 'topic', value: 'f' },
    },
    'notifications/initialized': {},
    'notifications/cancelled': { requestId: 1, reason: 'fuzz' },
    'notifications/progress': { progressToken: 1, progress: 1 },
    'notifications/roots/list_changed': {},
    'no/such/method': {},
  };
  const base = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, fromPlain(v)]));
  for (const [name, schema] of tools)
    base[`tools/call ${name}`] = new JsonObject([
      ['name', name],
      ['arguments', sampleOf(schema)],
    ]);
  base['tools/call'] = fromPlain({ name: 'no_such_tool', arguments: {} });
  return base;
}

/** What only the 2026-07-28 revision serves. */
const MODERN_ONLY: Record<string, unknown> = {
  'server/discover': {},
  'tasks/get': { taskId: 'no-such-task' },
  'tasks/update': { taskId: 'no-such-task', inputResponses: { a: { action: 'accept', content: { answer: 'x' } } } },
  'tasks/cancel': { taskId: 'no-such-task' },
  'subscriptions/listen': { notifications: { resourceSubscriptions: ['agent-service://server'] } },
};

const hostileId: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.constantFrom<JsonValue>(
    null,
    true,
    0,
    -1,
    1.5,
    '',
    [],
    new JsonObject([]),
    [1],
    new RawToken('1e309'),
    new RawToken('-0'),
    new RawToken('9007199254740993'),
    Number.MAX_SAFE_INTEGER,
  ),
  hostileString,
  fc.integer({ min: 1000, max: 40_000 }).map((n) => 'i'.repeat(n)),
);

/** Malformed or hostile JSON-RPC around a method and its (already fuzzed) params. */
function envelope(method: string, params: JsonValue, modern: boolean): fc.Arbitrary<string> {
  const callMethod = method.split(' ')[0]!;
  const withMeta = (p: JsonValue) =>
    modern && p instanceof JsonObject && !p.get('_meta')
      ? p.with(
          '_meta',
          fromPlain({
            'io.modelcontextprotocol/protocolVersion': MODERN_REVISION,
            'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
          }),
        )
      : p;
  const good = (id: JsonValue) =>
    new JsonObject([
      ['jsonrpc', '2.0'],
      ...(callMethod.startsWith('notifications/') ? [] : ([['id', id]] as [string, JsonValue][])),
      ['method', callMethod],
      ['params', withMeta(params)],
    ]);
  const base = good(7);
  return fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: 1e6 }).map((id) => jsonText(good(id))) },
    { weight: 3, arbitrary: mutateOne(base).map(jsonText) },
    { weight: 2, arbitrary: hostileId.map((id) => jsonText(good(id))) },
    // No jsonrpc (the WebSocket's short form when there is no id), or a wrong one.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom<JsonValue | undefined>(undefined, '1.0', 2, null, '2.0 ')
        .map((v) => jsonText(v === undefined ? base.without('jsonrpc') : base.with('jsonrpc', v))),
    },
    { weight: 1, arbitrary: fc.array(fc.constant(base), { maxLength: 3 }).map((batch) => jsonText(batch)) },
    { weight: 1, arbitrary: hostileJson(['jsonrpc', 'id', 'method', 'params', 'result', 'error']).map(jsonText) },
    { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_JSON, '') },
    { weight: 1, arbitrary: deepNesting },
    // A response the server never asked for.
    { weight: 1, arbitrary: fc.constant(jsonText(fromPlain({ jsonrpc: '2.0', id: 99, result: {} }))) },
  );
}

// ---------------------------------------------------------------------------------------------------------------

let app: App;
let stateless: App;
let alice: SignedIn;
let statelessAlice: SignedIn;
let methods: Record<string, JsonValue>;

const short = (text: string | undefined, max = 300) =>
  text === undefined || text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;

/**
 * The 2026-07-28 leg's SDK (`@modelcontextprotocol/server` 2.x) checks a spec method's params against its wire
 * schema inside the handler it registers and throws a plain Error when they fail, which it answers as -32603 with
 * zod's issue list as the message, where -32602 is due (the 2025-era server, where the handlers can be told such a
 * failure apart, answers -32602). That answer, and only that, is let through on the modern leg.
 */
const modernSdkParamsRefusal = (error: { code?: unknown; message?: unknown }) =>
  error.code === -32603 && typeof error.message === 'string' && /^\[\s*\{[\s\S]*"(code|path)"/.test(error.message);

/** Why a JSON-RPC reply is not one the fuzz may get (nothing: undefined). */
function badReply(reply: unknown, options: { modern?: boolean } = {}): string | undefined {
  if (typeof reply !== 'object' || reply === null) return `not a JSON-RPC message: ${short(JSON.stringify(reply))}`;
  const message = reply as Message;
  if ('result' in message) return undefined;
  const error = message.error as { code?: unknown; message?: unknown } | undefined;
  if (!error || typeof error.message !== 'string') return `neither result nor error: ${short(JSON.stringify(reply))}`;
  if (typeof error.code === 'number' && REFUSAL_CODES.has(error.code)) return undefined;
  if (options.modern && modernSdkParamsRefusal(error)) return undefined;
  return `error code ${String(error.code)} is not a refusal of the request: ${short(JSON.stringify(reply))}`;
}

/** Why an HTTP answer of an MCP wire is not acceptable (nothing: undefined). */
function badHttpAnswer(
  status: number,
  contentType: string,
  text: string,
  options: { modern?: boolean } = {},
): string | undefined {
  if (status >= 500) return `${status} ${short(text)}`;
  if (status === 202 || status === 204) return undefined;
  if (contentType.startsWith('text/event-stream')) {
    const events = text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .filter(Boolean);
    for (const data of events) {
      const problem = badReply(JSON.parse(data), options);
      if (problem) return problem;
    }
    return undefined;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `${status} ${contentType} is not JSON: ${short(text)}`;
  }
  if (status >= 400) {
    if (status === 401) return typeof (body as Json).detail === 'string' ? undefined : `401 body: ${short(text)}`;
    const error = (body as Json).error as Json | undefined;
    const fine =
      typeof error === 'object' &&
      error !== null &&
      (typeof error.code === 'string' || typeof error.code === 'number') &&
      typeof error.message === 'string' &&
      (typeof error.code !== 'number' || REFUSAL_CODES.has(error.code));
    return fine ? undefined : `${status} is not in the MCP error shape: ${short(text)}`;
  }
  const replies = Array.isArray(body) ? body : [body];
  for (const reply of replies) {
    const problem = badReply(reply, options);
    if (problem) return problem;
  }
  return undefined;
}

/** One POST, with its answer read whole (a subscription's stream: its headers and first event only). */
async function post(url: string, headers: Record<string, string>, body: string) {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(HANG_MS) });
    const contentType = res.headers.get('content-type') ?? '';
    if (headers['Mcp-Method'] === 'subscriptions/listen' && res.ok && contentType.startsWith('text/event-stream')) {
      await res.body?.cancel();
      return { status: res.status, contentType: 'application/json', text: '{"result":{}}' };
    }
    return { status: res.status, contentType, text: await res.text() };
  } catch (error) {
    throw new Error(
      `POST ${url} ${short(body)}: ${error instanceof Error && error.name === 'TimeoutError' ? 'no answer (hung)' : String(error)}`,
      { cause: error },
    );
  }
}

async function check<T>(label: string, arbitrary: fc.Arbitrary<T>, offset: number, run: (value: T) => Promise<void>) {
  const details = await fc.check(fc.asyncProperty(arbitrary, run), fuzzOptions(RUNS, offset));
  if (!details.failed) return undefined;
  const error = details.errorInstance;
  return `${label}: ${short(error instanceof Error ? error.message : String(error), 1500)}\n  seed ${details.seed}, path "${details.counterexamplePath}"; ${REPLAY_HINT}`;
}

const mcpHeaders = (user: SignedIn, extra: Record<string, string> = {}) => ({
  ...user.credentials,
  'Content-Type': 'application/json',
  Accept: BOTH,
  ...extra,
});

/** Opens a 2025-era session on streamable HTTP: its id. */
async function openSession(target: App, user: SignedIn): Promise<string> {
  const res = await fetch(`${target.url('main')}/mcp`, {
    method: 'POST',
    headers: mcpHeaders(user),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: JSON.parse(jsonText(methods.initialize ?? null)) as unknown,
    }),
  });
  await res.text();
  const id = res.headers.get('mcp-session-id');
  if (!id) throw new Error(`no session: ${res.status}`);
  await post(
    `${target.url('main')}/mcp`,
    mcpHeaders(user, { 'Mcp-Session-Id': id, 'Mcp-Protocol-Version': LEGACY_VERSION }),
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  );
  return id;
}

beforeAll(async () => {
  const env = {
    MCP_REQUESTS_PER_MINUTE: '1000000',
    MCP_TOOL_CALLS_PER_MINUTE: '1000000',
    BODY_LIMIT_BYTES: String(64 * 1024),
  };
  const client = await startTestClient(env);
  app = client.app;
  alice = await client.as('alice');
  const other = await startTestClient({ ...env, MCP_SESSION_MODE: 'stateless' });
  stateless = other.app;
  statelessAlice = await other.as('alice');
  const listed = await alice.post<{ tools: { name: string; inputSchema: JsonSchema }[] }>('/mcp/tools/list', {});
  methods = validParams(new Map(listed.body.tools.map((t) => [t.name, t.inputSchema])));
}, 60_000);

afterAll(async () => {
  await app?.close();
  await stateless?.close();
});

/** The cases of one method: its params broken one field at a time, inside envelopes good and bad. */
const casesOf = (method: string, modern = false) =>
  mutateOrKeep(methods[method] ?? fromPlain(MODERN_ONLY[method])).chain((p) => envelope(method, p, modern));
const mutateOrKeep = (params: JsonValue) =>
  fc.oneof({ weight: 1, arbitrary: fc.constant(params) }, { weight: 3, arbitrary: mutateOne(params) });

describe('MCP methods, fuzzed, on every wire', () => {
  it('lists a case for every tool the caller may call', () => {
    expect(Object.keys(methods)).toEqual(expect.arrayContaining(TOOL_NAMES.map((name) => `tools/call ${name}`)));
  });

  it('streamable HTTP, 2025 era, stateful: refusals in kind, and the session answers afterwards', async () => {
    const problems: string[] = [];
    const session = await openSession(app, alice);
    const url = `${app.url('main')}/mcp`;
    const headers = mcpHeaders(alice, { 'Mcp-Session-Id': session, 'Mcp-Protocol-Version': LEGACY_VERSION });
    for (const [index, method] of Object.keys(methods).entries()) {
      const problem = await check(`stateful ${method}`, casesOf(method), index, async (body) => {
        const answer = await post(url, headers, body);
        const bad = badHttpAnswer(answer.status, answer.contentType, answer.text);
        if (bad) throw new Error(`${bad}\n  sent: ${short(body)}`);
        const after = await post(url, headers, JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'tools/list' }));
        if (after.status !== 200 || !after.text.includes('"tools"'))
          throw new Error(`the session no longer answers (${after.status} ${short(after.text)}) after ${short(body)}`);
      });
      if (problem) problems.push(problem);
    }
    expect(problems).toEqual([]);
  }, 300_000);

  it('streamable HTTP, stateless: every POST on its own', async () => {
    const problems: string[] = [];
    const url = `${stateless.url('main')}/mcp`;
    const headers = mcpHeaders(statelessAlice, { 'Mcp-Protocol-Version': LEGACY_VERSION });
    for (const [index, method] of Object.keys(methods).entries()) {
      const problem = await check(`stateless ${method}`, casesOf(method), 100 + index, async (body) => {
        const answer = await post(url, headers, body);
        const bad = badHttpAnswer(answer.status, answer.contentType, answer.text);
        if (bad) throw new Error(`${bad}\n  sent: ${short(body)}`);
      });
      if (problem) problems.push(problem);
    }
    const after = await post(url, headers, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
    expect(after.text).toContain('"tools"');
    expect(problems).toEqual([]);
  }, 300_000);

  it('streamable HTTP, 2026-07-28: the revision’s methods too, with their routing headers', async () => {
    const problems: string[] = [];
    const url = `${app.url('main')}/mcp`;
    const modernMethods = [...Object.keys(methods).filter((m) => m !== 'initialize'), ...Object.keys(MODERN_ONLY)];
    for (const [index, method] of modernMethods.entries()) {
      const name = method.startsWith('tools/call ') ? method.slice('tools/call '.length) : undefined;
      const headers = mcpHeaders(alice, {
        'Mcp-Protocol-Version': MODERN_REVISION,
        'Mcp-Method': method.split(' ')[0]!,
        ...(name && { 'Mcp-Name': name }),
      });
      const problem = await check(`modern ${method}`, casesOf(method, true), 200 + index, async (body) => {
        const answer = await post(url, headers, body);
        const bad = badHttpAnswer(answer.status, answer.contentType, answer.text, { modern: true });
        if (bad) throw new Error(`${bad}\n  sent: ${short(body)}`);
      });
      if (problem) problems.push(problem);
    }
    expect(problems).toEqual([]);
  }, 300_000);

  it('legacy SSE: every request answered on the stream, which stays open', async () => {
    const problems: string[] = [];
    const stream = await openSseStream(app, alice);
    try {
      const url = `${app.url('main')}/messages?sessionId=${stream.sessionId}`;
      const headers = mcpHeaders(alice);
      for (const [index, method] of Object.keys(methods).entries()) {
        const problem = await check(`SSE ${method}`, casesOf(method), 300 + index, async (body) => {
          const answer = await post(url, headers, body);
          const bad = badHttpAnswer(answer.status, answer.contentType, answer.text);
          if (bad) throw new Error(`${bad}\n  sent: ${short(body)}`);
          const owed = answer.status === 202 ? owedReply(body) : undefined;
          if (owed !== undefined) {
            const reply = await stream.replyTo(owed);
            const problem = badReply(reply);
            if (problem) throw new Error(`${problem}\n  sent: ${short(body)}`);
          }
          const probe = `probe-${index}-${Math.random()}`;
          const sent = await post(url, headers, JSON.stringify({ jsonrpc: '2.0', id: probe, method: 'ping' }));
          if (sent.status !== 202)
            throw new Error(`the stream's session refused a ping: ${sent.status} after ${short(body)}`);
          await stream.replyTo(probe);
        });
        if (problem) problems.push(problem);
      }
    } finally {
      stream.close();
    }
    expect(problems).toEqual([]);
  }, 300_000);

  // Skipped until the WebSocket transport answers every message: today an object that is not a valid JSON-RPC
  // message (`"jsonrpc": "2.0 "`, `"jsonrpc": 2`, params an array) gets no answer at all, and a message nested
  // thousands deep leaves the socket unanswered until it closes abnormally (1006). Run it with `it` to see them.
  it('WebSocket: every message answered in kind, and the socket stays open', async () => {
    const problems: string[] = [];
    const socket = await openMcpSocket(app, alice);
    try {
      for (const [index, method] of Object.keys(methods).entries()) {
        let probes = 0;
        const problem = await check(`WebSocket ${method}`, casesOf(method), 400 + index, async (text) => {
          const probe = `probe-${index}-${++probes}`;
          const owed = owedSocketReply(text);
          socket.send(text);
          socket.send(JSON.stringify({ jsonrpc: '2.0', id: probe, method: 'ping' }));
          const before = await socket.until((m) => m.id === probe, `the probe after ${short(text)}`);
          if (owed !== undefined) {
            const reply = await socket.until(owed.match, `the answer to ${short(text)}`);
            const problem = owed.shortForm ? badReply({ ...reply, jsonrpc: '2.0' }) : badReply(reply);
            if (problem) throw new Error(`${problem}\n  sent: ${short(text)}`);
          }
          if (before.error) throw new Error(`the probe failed after ${short(text)}: ${JSON.stringify(before)}`);
        });
        if (problem) problems.push(problem);
      }
      expect(problems).toEqual([]);
      expect(socket.closed()).toBe(false);
    } finally {
      socket.close();
    }
  }, 300_000);

  it('REST-style /mcp/<method> and /message: a result or a 4xx in the MCP shape', async () => {
    const problems: string[] = [];
    const rest = [
      'initialize',
      'tools/list',
      'tools/call',
      'resources/list',
      'resources/read',
      'prompts/list',
      'prompts/get',
      'logging/setLevel',
    ];
    const cases = [
      ...Object.keys(methods)
        .filter((m) => rest.includes(m.split(' ')[0]!))
        .map((m) => [m, `/mcp/${m.split(' ')[0]!}`] as const),
      ['message', '/message'] as const,
      ['message', '/mcp/message'] as const,
    ];
    for (const [index, [method, path]] of cases.entries()) {
      const params = method === 'message' ? fromPlain({ query: 'fuzz', use_tools: false }) : methods[method]!;
      const bodies =
        method === 'message' || method === 'initialize'
          ? mutateOrKeep(params).map(jsonText)
          : mutateOrKeep(params).chain((p) => envelope(method, p, false));
      const problem = await check(`REST ${path} ${method}`, bodies, 500 + index, async (body) => {
        const answer = await post(`${app.url('main')}${path}`, mcpHeaders(alice, { Accept: 'application/json' }), body);
        if (answer.status >= 500) throw new Error(`${answer.status} ${short(answer.text)}\n  sent: ${short(body)}`);
        if (answer.status >= 400) {
          const bad = badHttpAnswer(answer.status, answer.contentType, answer.text);
          if (bad) throw new Error(`${bad}\n  sent: ${short(body)}`);
        }
      });
      if (problem) problems.push(problem);
    }
    expect(problems).toEqual([]);
  }, 300_000);
});

// ---------------------------------------------------------------------------------------------------------------
// Which reply a message is owed, and the streams that carry them.

/** The id a request is owed a reply under on the SSE wire (the SDK refuses anything else with 400 before). */
function owedReply(text: string): string | number | undefined {
  try {
    const parsed = JSONRPCRequestSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.id : undefined;
  } catch {
    return undefined;
  }
}

/** What the WebSocket owes a message: a reply matching it, or nothing (a notification, a response). */
function owedSocketReply(text: string): { match: (m: Message) => boolean; shortForm?: boolean } | undefined {
  const refusal = (m: Message) => m.id === null && typeof (m.error as Json | undefined)?.code === 'number';
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { match: refusal };
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return { match: refusal };
  const record = message as Message;
  if (record.jsonrpc === undefined && typeof record.method === 'string')
    return { match: (m) => m.method === record.method && ('result' in m || 'error' in m), shortForm: true };
  const request = JSONRPCRequestSchema.safeParse(record);
  if (request.success) return { match: (m) => m.id === request.data.id };
  // A notification or a response is owed nothing; anything else is an invalid request.
  return JSONRPCMessageSchema.safeParse(record).success ? undefined : { match: refusal };
}

interface MessageStream {
  until(match: (m: Message) => boolean, what: string): Promise<Message>;
}

/** Messages as they arrive, and waits for the one that matches (or fails when none comes in time). */
function inbox(): MessageStream & { push(m: Message): void; fail(reason: string): void } {
  const received: Message[] = [];
  const waiting: { match: (m: Message) => boolean; resolve: (m: Message) => void }[] = [];
  let failure: string | undefined;
  return {
    push(m) {
      const i = waiting.findIndex((w) => w.match(m));
      if (i >= 0) waiting.splice(i, 1)[0]!.resolve(m);
      else received.push(m);
    },
    fail(reason) {
      failure = reason;
    },
    until(match, what) {
      const i = received.findIndex(match);
      if (i >= 0) return Promise.resolve(received.splice(i, 1)[0]!);
      if (failure) return Promise.reject(new Error(`${failure}, waiting for ${what}`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no answer in ${HANG_MS} ms: ${what}${failure ? ` (${failure})` : ''}`)),
          HANG_MS,
        );
        waiting.push({
          match,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
  };
}

async function openSseStream(target: App, user: SignedIn) {
  const controller = new AbortController();
  const res = await fetch(`${target.url('main')}/sse`, { headers: user.credentials, signal: controller.signal });
  const messages = inbox();
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let sessionId: string | undefined;
  let resolveSession!: (id: string) => void;
  const opened = new Promise<string>((resolve) => (resolveSession = resolve));
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          if (event === 'endpoint') resolveSession((sessionId = /sessionId=([0-9a-f-]+)/.exec(data)![1]!));
          else if (event === 'message') messages.push(JSON.parse(data) as Message);
        }
      }
      messages.fail('the stream ended');
    } catch (error) {
      messages.fail(`the stream broke: ${String(error)}`);
    }
  })();
  await opened;
  return {
    sessionId: sessionId!,
    replyTo: (id: string | number) => messages.until((m) => m.id === id, `the reply to ${String(id).slice(0, 50)}`),
    close: () => controller.abort(),
  };
}

async function openMcpSocket(target: App, user: SignedIn) {
  const socket = new WebSocket(socketUrl(target), 'mcp', { headers: user.credentials });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const messages = inbox();
  let closed = false;
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8')) as Message));
  socket.on('close', (code, reason) => {
    closed = true;
    messages.fail(`the socket closed (${code} ${reason.toString()})`);
  });
  return {
    send: (text: string) => socket.send(text),
    until: (match: (m: Message) => boolean, what: string) => messages.until(match, what),
    closed: () => closed,
    close: () => socket.close(),
  };
}
