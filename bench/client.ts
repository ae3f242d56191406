import { BODY_ID } from './load.js';
import { ADMIN } from './service.js';

/**
 * What the cases ask the service outside of measured load: sign in, create an API key, open MCP sessions,
 * and check that an answer is the one the load is meant to measure.
 */

export const JSON_HEADERS = { 'Content-Type': 'application/json' };
export const MCP_ACCEPT = 'application/json, text/event-stream';

export async function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function expectOk(
  what: string,
  url: string,
  init: Parameters<typeof request>[1],
): Promise<{ headers: Headers; text: string }> {
  const res = await request(url, init);
  if (res.status < 200 || res.status >= 300) throw new Error(`${what}: ${res.status} ${res.text.slice(0, 300)}`);
  return res;
}

/** POST /auth/login as the bootstrap administrator: the access token. */
export async function adminToken(main: string): Promise<string> {
  const { text } = await expectOk('login', `${main}/auth/login`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify(ADMIN),
  });
  return (JSON.parse(text) as { access_token: string }).access_token;
}

/** POST /api/v1/api-keys: a new key of the caller's. */
export async function createApiKey(main: string, token: string, name = 'bench'): Promise<string> {
  const { text } = await expectOk('create API key', `${main}/api/v1/api-keys`, {
    method: 'POST',
    headers: { ...JSON_HEADERS, Authorization: `Bearer ${token}` },
    body: JSON.stringify({ name }),
  });
  return (JSON.parse(text) as { api_key: string }).api_key;
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A JSON-RPC request body. */
export const rpc = (id: number, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) });

/** The same as a load target's `bodyTemplate`: the load generator gives each request an id of its own. */
export const rpcTemplate = (method: string, params?: unknown): string =>
  `{"jsonrpc":"2.0","id":${BODY_ID},"method":${JSON.stringify(method)}${
    params === undefined ? '' : `,"params":${JSON.stringify(params)}`
  }}`;

/** The JSON-RPC messages of an answer sent as JSON or as server-sent events. */
export function rpcMessages(text: string): { id?: unknown; result?: unknown; error?: unknown }[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) return [JSON.parse(trimmed) as never].flat();
  return trimmed
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
    .filter((data) => data.startsWith('{'))
    .map((data) => JSON.parse(data) as never);
}

/**
 * Opens a streamable HTTP session (initialize, then notifications/initialized) with the given credential
 * headers; answers its `Mcp-Session-Id`.
 */
export async function openMcpSession(mcpUrl: string, headers: Record<string, string>): Promise<string> {
  const init = await expectOk('MCP initialize', mcpUrl, {
    method: 'POST',
    headers: { ...headers, ...JSON_HEADERS, Accept: MCP_ACCEPT },
    body: rpc(0, 'initialize', {
      protocolVersion: '2025-03-26',
      capabilities: {},
      clientInfo: { name: 'bench', version: '1' },
    }),
  });
  const session = init.headers.get('mcp-session-id');
  if (!session) throw new Error('MCP initialize: no Mcp-Session-Id');
  await expectOk('MCP notifications/initialized', mcpUrl, {
    method: 'POST',
    headers: { ...headers, ...JSON_HEADERS, Accept: MCP_ACCEPT, 'Mcp-Session-Id': session },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  return session;
}

/** Calls a tool in a session once and checks that it succeeded (`isError` false). */
export async function checkToolCall(
  mcpUrl: string,
  headers: Record<string, string>,
  name: string,
  args: Record<string, unknown>,
  /** The 2026-07-28 revision's per-request `_meta` envelope, for a modern request. */
  envelope?: Record<string, unknown>,
): Promise<void> {
  const { text } = await expectOk(`tools/call ${name}`, mcpUrl, {
    method: 'POST',
    headers: { ...headers, ...JSON_HEADERS, Accept: MCP_ACCEPT },
    body: rpc(1, 'tools/call', { name, arguments: args, ...(envelope && { _meta: envelope }) }),
  });
  const answer = rpcMessages(text).find((m) => m.id === 1);
  const result = answer?.result as { isError?: boolean } | undefined;
  if (!result || result.isError === true) throw new Error(`tools/call ${name} did not succeed: ${text.slice(0, 300)}`);
}

/** Checks that a request answers 2xx (what the load will send), failing with the answer otherwise. */
export async function checkOk(what: string, url: string, init: Parameters<typeof request>[1] = {}): Promise<string> {
  return (await expectOk(what, url, init)).text;
}

/** Runs `work` over `items` with at most `concurrency` at once. */
export async function pool<T, R>(items: T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}
