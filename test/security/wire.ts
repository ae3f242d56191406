import WebSocket from 'ws';
import type { App } from '../../src/app.js';

/**
 * The requests of the impersonation matrix, written out by hand so that every header (a session id, a
 * `Last-Event-ID`, a credential) is exactly the one chosen, and every answer (JSON, a page, an event stream) is
 * read as text, for the checks to search.
 */

export type Listener = 'main' | 'playground' | 'builder';

export interface Request {
  listener: Listener;
  method: string;
  /** Path and query string. */
  path: string;
  headers?: Record<string, string>;
  /** JSON unless `form` or a Content-Type header says otherwise. */
  body?: unknown;
  form?: Record<string, string>;
  /**
   * The answer may be an event stream that stays open (GET streams, `subscriptions/listen`): it is read until it
   * falls quiet. Any other is read to its end. GET requests are open unless told otherwise.
   */
  open?: boolean;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The JSON body (the last JSON-RPC message of an event stream), when there is one. */
  json: unknown;
}

/**
 * How long an open event stream is read after it last said something: what such a stream replays is written with
 * its headers, so this only bounds streams that, rightly, stay open with nothing more to say.
 */
const STREAM_WINDOW_MS = 400;
/** A request that takes longer than this has hung: it fails with its method and path instead of the whole file. */
const HUNG_MS = 20_000;

async function readOpenStream(res: Response, abort: AbortController): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const quiet = new Promise<'quiet'>((resolve) => {
      timer = setTimeout(() => resolve('quiet'), STREAM_WINDOW_MS);
    });
    const next = await Promise.race([reader.read(), quiet]).finally(() => clearTimeout(timer));
    if (next === 'quiet' || next.done) break;
    text += decoder.decode(next.value as Uint8Array, { stream: true });
  }
  abort.abort();
  return text;
}

function parse(text: string, contentType: string): unknown {
  if (contentType.includes('text/event-stream')) {
    const data = text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .filter((line) => line.startsWith('{'));
    return data.length > 0 ? (JSON.parse(data.at(-1)!) as unknown) : undefined;
  }
  if (!/\bjson\b/.test(contentType) || text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Sends one request to a listener of the app and reads the whole answer (an open event stream until quiet). */
export async function send(app: App, request: Request): Promise<Answer> {
  const headers: Record<string, string> = { ...request.headers };
  let body: string | undefined;
  if (request.form) {
    headers['Content-Type'] ??= 'application/x-www-form-urlencoded';
    body = new URLSearchParams(request.form).toString();
  } else if (request.body !== undefined) {
    headers['Content-Type'] ??= 'application/json';
    body = JSON.stringify(request.body);
  }
  const abort = new AbortController();
  try {
    const res = await fetch(`${app.url(request.listener)}${request.path}`, {
      method: request.method,
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.any([abort.signal, AbortSignal.timeout(HUNG_MS)]),
    });
    const contentType = res.headers.get('content-type') ?? '';
    const open = contentType.includes('text/event-stream') && (request.open ?? request.method === 'GET');
    const text = open ? await readOpenStream(res, abort) : await res.text();
    return { status: res.status, headers: res.headers, text, json: parse(text, contentType) };
  } catch (error) {
    throw new Error(`${request.method} ${request.path} on ${request.listener}: ${String(error)}`, { cause: error });
  }
}

/** The `id:` of each event of an event stream, in order. */
export function eventIds(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('id:'))
    .map((line) => line.slice(3).trim());
}

export interface SocketOutcome {
  /** The HTTP status of a refused upgrade; 101 when the socket opened. */
  status: number;
  /** Every message received, as text. */
  messages: string[];
  /** The close code, when the server closed the socket. */
  closeCode?: number;
}

/**
 * Opens a WebSocket, sends `messages` as soon as it is open, and gathers what comes back until the server closes
 * the socket or `done` says enough.
 */
export function converse(
  url: string,
  options: {
    headers?: Record<string, string>;
    messages: unknown[];
    done: (received: string[]) => boolean;
  },
): Promise<SocketOutcome> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: options.headers ?? {} });
    const messages: string[] = [];
    let settled = false;
    const finish = (outcome: SocketOutcome) => {
      if (settled) return;
      settled = true;
      socket.terminate();
      resolve(outcome);
    };
    socket.once('unexpected-response', (_req, res) => {
      res.resume();
      finish({ status: res.statusCode ?? 0, messages });
    });
    socket.once('error', (err) => {
      if (!settled) reject(err);
    });
    socket.once('open', () => {
      for (const message of options.messages) socket.send(JSON.stringify(message));
    });
    socket.on('message', (data: Buffer) => {
      messages.push(data.toString());
      if (options.done(messages)) finish({ status: 101, messages });
    });
    socket.once('close', (code) => finish({ status: 101, messages, closeCode: code }));
  });
}
