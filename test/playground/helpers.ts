import type { App } from '../../src/app.js';
import { parseEvents } from '../helpers/sse.js';

export type Json = Record<string, unknown>;

export interface PlaygroundReply<T = Json> {
  status: number;
  headers: Headers;
  body: T;
}

/** One request to the app's playground listener, as the web UI makes it. */
export async function playground<T = Json>(
  app: App,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<PlaygroundReply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${app.url('playground')}${path}`, {
    method,
    headers,
    ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
  });
  const text = await res.text();
  const json = /\bjson\b/.test(res.headers.get('content-type') ?? '');
  return { status: res.status, headers: res.headers, body: (text && json ? JSON.parse(text) : {}) as T };
}

/** Streams one turn over server-sent events and returns the events. */
export async function streamChat(app: App, token: string, sessionId: string, message: string) {
  const res = await fetch(`${app.url('playground')}/api/playground/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ session_id: sessionId, message, stream: true }),
  });
  return { status: res.status, headers: res.headers, events: parseEvents(await res.text()) };
}

export async function newSession(app: App, token: string, name = 'Trying it out'): Promise<string> {
  const res = await playground(app, 'POST', '/api/playground/sessions', { token, body: { name } });
  if (res.status !== 201) throw new Error(`session not created: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session_id as string;
}

/** Waits until `check` holds (polling), or fails after `ms`. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
