import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { killRunning, startServing } from '../helpers/service-process.js';
import { parseEvents } from '../helpers/sse.js';

/**
 * SIGTERM while chat turns stream on every chat wire: each stream ends with its area's final event, never a bare
 * close. A turn that can finish within the drain ends with its completion (`message_complete`, the playground's
 * `end`); one that cannot is stopped just before the drain's end and says why, with the service-stopping error
 * event. A new turn during the drain is refused with that error as a 503. The process exits 0.
 *
 * The offline model is paced (`OFFLINE_LLM_WORD_DELAY_MS`) so that the lengths are known: a short answer streams
 * in a fraction of the drain, a long one (a long message, quoted back word by word) in well over all of it.
 */
afterEach(killRunning);

type Json = Record<string, unknown>;

const WORD_DELAY_MS = 80;
const SHUTDOWN_TIMEOUT_MS = 7_000;
const SHORT = 'hi';
/** A hundred one-letter words: the offline model quotes them back, one event each. */
const LONG = Array.from({ length: 100 }, () => 'a').join(' ');
const REFUSED_REQUEST = 'turn-during-drain';

/** One streamed turn as its client sees it: the events in order, and how the response ended. */
interface Streamed {
  wire: string;
  status?: number;
  events: Json[];
  /** The response was read to its end (not cut off). */
  complete: boolean;
  /** The socket's close code (WebSocket only). */
  closeCode?: number;
}

/** Splits a stream body into its events: `data: <json>` blocks, newline-delimited JSON, or named SSE events. */
type Format = 'data' | 'ndjson' | 'named';

function eventsOf(text: string, format: Format): Json[] {
  if (format === 'ndjson')
    return text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Json);
  if (format === 'named') return parseEvents(text).map(({ event, data }) => ({ type: event, ...data }));
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice('data: '.length)) as Json);
}

/**
 * POSTs a streamed turn and reads it as it comes: `started` resolves once the first piece of the answer is in,
 * `ended` with the whole stream. Each stream has a connection of its own.
 */
function streamTurn(wire: string, url: string, token: string, body: Json, accept: string, format: Format) {
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const ended = new Promise<Streamed>((resolve) => {
    const target = new URL(url);
    const req = request({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      agent: new Agent({ keepAlive: true }),
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: accept },
    });
    const outcome: Streamed = { wire, events: [], complete: false };
    req.once('error', () => resolve(outcome));
    req.once('response', (res) => {
      outcome.status = res.statusCode;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (/content_delta|event: token/.test(text)) markStarted();
      });
      const settle = () => {
        outcome.events = eventsOf(text, format);
        resolve(outcome);
      };
      res.once('error', settle);
      res.once('end', () => {
        outcome.complete = !res.aborted;
        settle();
      });
    });
    req.end(JSON.stringify(body));
  });
  return { started, ended };
}

/** A playground socket that has authenticated and sent one chat message. */
function socketTurn(wire: string, url: string, token: string, message: string) {
  const socket = new WebSocket(url);
  const outcome: Streamed = { wire, events: [], complete: false };
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  socket.on('open', () => socket.send(JSON.stringify({ type: 'auth', token })));
  socket.on('message', (data: Buffer) => {
    const event = JSON.parse(data.toString()) as Json;
    if (event.type === 'auth_success') socket.send(JSON.stringify({ type: 'chat', message }));
    else outcome.events.push(event);
    if (event.type === 'token') markStarted();
  });
  const ended = new Promise<Streamed>((resolve) =>
    socket.once('close', (code) => {
      outcome.complete = true;
      outcome.closeCode = code;
      resolve(outcome);
    }),
  );
  return { started, ended };
}

async function post(url: string, token: string, body: Json): Promise<Json> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBeLessThan(300);
  return (await res.json()) as Json;
}

async function login(url: string): Promise<string> {
  const res = await fetch(`${url}/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/**
 * How a stream ended: whether it was answered (200, or an open socket), read to its end, and what its last event
 * was — the wire's completion (`message_complete`, the playground's `end`), the area's error event with the
 * service-stopping code, or anything else (a bare end).
 */
function outcomeOf(stream: Streamed) {
  const last = stream.events.at(-1);
  const completion = last?.type === 'message_complete' || (last?.type === 'end' && last.cancelled === false);
  const stopping =
    last?.type === 'error' &&
    ((last.error as Json | undefined)?.code === 'service_stopping' || last.code === 'SERVICE_STOPPING');
  return {
    wire: stream.wire,
    ok: stream.status === 200 || stream.closeCode !== undefined,
    complete: stream.complete,
    last: completion ? 'completion' : stopping ? 'stopping' : `bare end after ${JSON.stringify(last)}`,
  };
}

describe('SIGTERM with chat turns streaming', () => {
  it('ends every stream with its final event: the completion within the drain, else the stopping error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-sigterm-streams-'));
    const dbFile = join(dir, 'agent.db');
    const env = {
      ADMIN_PASSWORD,
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      OFFLINE_LLM_WORD_DELAY_MS: String(WORD_DELAY_MS),
      MCP_MAX_CONCURRENT_STREAMS: '20',
    };
    const { run: serving, url } = await startServing(dbFile, env);
    const playgroundUrl = String(serving.lines.find((l) => l.msg === 'listening' && l.listener === 'playground')?.url);
    const token = await login(url);
    const session = async (name: string) =>
      String((await post(`${playgroundUrl}/api/playground/sessions`, token, { name })).session_id);
    const sessions = {
      sseShort: await session('sse short'),
      sseLong: await session('sse long'),
      socketShort: await session('socket short'),
      socketLong: await session('socket long'),
    };

    // A keep-alive connection that has answered once: a request sent on it during the drain still reaches the app.
    const pooled = new Agent({ keepAlive: true, maxSockets: 1 });
    const live = await new Promise<number | undefined>((resolve, reject) =>
      request(`${url}/health/live`, { agent: pooled }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode));
      })
        .once('error', reject)
        .end(),
    );
    expect(live).toBe(200);

    const message = (query: string) => ({ query, stream: true, use_tools: false });
    const turns = {
      short: [
        streamTurn('/mcp/message', `${url}/mcp/message`, token, message(SHORT), 'text/event-stream', 'data'),
        streamTurn('/message ndjson', `${url}/message`, token, message(SHORT), 'application/x-ndjson', 'ndjson'),
        streamTurn('/message sse', `${url}/message`, token, message(SHORT), 'text/event-stream', 'data'),
        streamTurn(
          'playground sse',
          `${playgroundUrl}/api/playground/chat`,
          token,
          { session_id: sessions.sseShort, message: SHORT, stream: true },
          'text/event-stream',
          'named',
        ),
        socketTurn(
          'playground socket',
          `${playgroundUrl.replace('http', 'ws')}/ws/playground/${sessions.socketShort}`,
          token,
          SHORT,
        ),
      ],
      long: [
        streamTurn('/mcp/message', `${url}/mcp/message`, token, message(LONG), 'text/event-stream', 'data'),
        streamTurn('/message ndjson', `${url}/message`, token, message(LONG), 'application/x-ndjson', 'ndjson'),
        streamTurn('/message sse', `${url}/message`, token, message(LONG), 'text/event-stream', 'data'),
        streamTurn(
          'playground sse',
          `${playgroundUrl}/api/playground/chat`,
          token,
          { session_id: sessions.sseLong, message: LONG, stream: true },
          'text/event-stream',
          'named',
        ),
        socketTurn(
          'playground socket',
          `${playgroundUrl.replace('http', 'ws')}/ws/playground/${sessions.socketLong}`,
          token,
          LONG,
        ),
      ],
    };
    // Every turn is under way, its answer streaming, when the signal comes.
    await Promise.all([...turns.short, ...turns.long].map((t) => t.started));
    serving.child.kill('SIGTERM');
    await serving.waitFor((l) => l.msg === 'shutting down');

    // A turn asked for during the drain (on a connection the service still reads from).
    const refusedTurn = new Promise<{ status?: number; retryAfter?: string; body: string }>((resolve) => {
      const req = request(`${url}/mcp/message`, {
        method: 'POST',
        agent: pooled,
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          'X-Request-Id': REFUSED_REQUEST,
        },
      });
      req.once('error', (error) => resolve({ body: error.message }));
      req.once('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.once('end', () => resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'], body }));
      });
      req.end(JSON.stringify(message(SHORT)));
    });
    const short = await Promise.all(turns.short.map((t) => t.ended));
    const long = await Promise.all(turns.long.map((t) => t.ended));
    const wires = ['/mcp/message', '/message ndjson', '/message sse', 'playground sse', 'playground socket'];
    // Every stream was read to its end (not cut off), after a 200 (or an open socket), and ended with a final event:
    // a short answer finishes within the drain, with its completion; a long one is stopped at the drain's deadline
    // and says so.
    expect(short.map(outcomeOf)).toEqual(wires.map((wire) => ({ wire, ok: true, complete: true, last: 'completion' })));
    expect(long.map(outcomeOf)).toEqual(wires.map((wire) => ({ wire, ok: true, complete: true, last: 'stopping' })));
    for (const stream of short) {
      const answer = stream.events.map((e) => (e.delta ?? e.content ?? '') as string).join('');
      expect(answer).toMatch(/^Offline model: you said "hi"\..*No real model is configured/s);
    }
    // A long one was cut after part of its answer.
    for (const stream of long) {
      expect(stream.events.some((e) => e.type === 'content_delta' || e.type === 'token')).toBe(true);
      expect(stream.events.some((e) => e.type === 'message_complete' || e.type === 'end')).toBe(false);
    }
    // The sockets close once their turn has had its last word, telling the client to go elsewhere.
    expect([short, long].flat().flatMap((s) => (s.closeCode === undefined ? [] : [s.closeCode]))).toEqual([1001, 1001]);

    // The turn asked for during the drain was refused before any stream started, in the MCP body.
    const refused = await refusedTurn;
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('1');
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        code: 'service_stopping',
        message: expect.any(String) as unknown,
        trace_id: expect.any(String) as unknown,
      },
    });

    pooled.destroy();
    expect(await serving.exited).toBe(0);
    expect(serving.lines.map((l) => l.msg)).toContain('stopped');
    // Stopping a turn is no failure of the service: nothing was logged as an error (but the refusal, a 503 like
    // any other).
    const refusal = (l: Json) => (l.req as Json | undefined)?.id === REFUSED_REQUEST;
    expect(serving.lines.filter((l) => Number(l.level) >= 50 && !refusal(l))).toEqual([]);

    // The playground kept what each turn came to: the short answers whole, the long ones as stopped by the shutdown.
    const again = await startServing(dbFile, { ADMIN_PASSWORD });
    const againToken = await login(again.url);
    const againPlayground = String(
      again.run.lines.find((l) => l.msg === 'listening' && l.listener === 'playground')?.url,
    );
    const answerOf = async (id: string) => {
      const res = await fetch(`${againPlayground}/api/playground/sessions/${id}`, {
        headers: { Authorization: `Bearer ${againToken}` },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { messages: Json[] }).messages.at(-1);
    };
    for (const id of [sessions.sseShort, sessions.socketShort])
      expect(await answerOf(id)).toMatchObject({ role: 'assistant', error: null, cancelled: false });
    for (const id of [sessions.sseLong, sessions.socketLong])
      expect(await answerOf(id)).toMatchObject({ role: 'assistant', error: 'SERVICE_STOPPING' });
    again.run.child.kill('SIGTERM');
    expect(await again.run.exited).toBe(0);
  }, 60_000);
});
