import { type IncomingMessage, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import * as errors from '../../src/errors.js';
import { type ErrorArea, ErrorAreas } from '../../src/http/render-errors.js';
import type { RouteDefinition, RouteGroup } from '../../src/http/route.js';
import { buildTestApp } from '../helpers/app.js';
import { accessToken } from '../helpers/auth.js';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * Every status the service answers must be in the OpenAPI description of the operation that answered it. Each
 * route is sent the requests the framework refuses (no credential, a bad body, a bad parameter, a foreign origin,
 * the start-up gate), and every route declaration is checked against what its middleware and handler can raise.
 */

type Schema = { $ref?: string; required?: string[] };
type ResponseObject = { description: string; content?: Record<string, { schema?: Schema }> };
type Operation = { operationId: string; responses: Record<string, ResponseObject> };
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

const LISTENERS = ['main', 'playground', 'builder'] as const;
type ListenerName = (typeof LISTENERS)[number];
const BODY_LIMIT = 4096;
const ADMIN_PASSWORD = 'bootstrap-secret-1';

/** Served by every listener outside the route registry, and why each is not an operation of the description. */
const OUTSIDE_THE_DESCRIPTION: Record<string, string> = {
  '/openapi.json': 'the description itself',
  '/docs': 'Swagger UI page',
  '/docs/init.js': 'Swagger UI start-up script',
  '/redoc': 'Redoc page',
  '/mcp/ws': 'MCP over WebSocket: an HTTP upgrade, which OpenAPI cannot describe',
};

interface ServedRoute {
  listener: ListenerName;
  group: RouteGroup;
  route: RouteDefinition;
  /** The path as the description names it (`/api/v1/api-keys/{key_id}`). */
  path: string;
  /** The area whose shape its errors take: the listener's longest matching group prefix. */
  area: ErrorArea;
  label: string;
}

interface Probe {
  name: string;
  headers?: Record<string, string>;
  body?: string;
  /** Sent with the administrator's token, to get past authentication to the route's own checks. */
  authenticated?: boolean;
  /** Replaces every path parameter. */
  param?: string;
  query?: string;
}

interface Answer {
  status: number;
  contentType: string;
  body: string;
  sessionId?: string;
}

function servedRoutes(app: App): ServedRoute[] {
  const served: ServedRoute[] = [];
  for (const listener of LISTENERS) {
    const areas = new ErrorAreas();
    for (const group of app.routeGroups(listener)) if (group.prefix) areas.add(group.prefix, group.area);
    for (const group of app.routeGroups(listener)) {
      for (const route of group.routes) {
        if (route.internal) continue;
        const path = `${group.prefix}${route.path}`.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}') || '/';
        const area = areas.areaFor(`${group.prefix}${route.path}`);
        served.push({ listener, group, route, path, area, label: `${route.method.toUpperCase()} ${path}` });
      }
    }
  }
  return served;
}

/** The requests the framework answers on its own for a route like this one. */
function probesFor(route: RouteDefinition): Probe[] {
  const json = 'application/json';
  const probes: Probe[] = [
    { name: 'no credential and no body' },
    { name: 'an unsupported X-API-Version', headers: { 'X-API-Version': 'v99' } },
    { name: 'a foreign Origin', headers: { Origin: 'http://evil.example' } },
    { name: 'a malformed JSON body', headers: { 'Content-Type': json }, body: '{"name":' },
    {
      name: 'an oversized body',
      headers: { 'Content-Type': json },
      body: JSON.stringify({ padding: 'x'.repeat(BODY_LIMIT * 2) }),
    },
    { name: 'a body in an unsupported charset', headers: { 'Content-Type': `${json}; charset=koi8-r` }, body: '{}' },
  ];
  if (route.access === 'authenticated') {
    probes.push({ name: 'an invalid bearer token', headers: { Authorization: 'Bearer not-a-token' } });
  }
  const req = route.request;
  if (req?.body) {
    const type = req.bodyContentTypes?.find((t) => t.endsWith('json')) ?? json;
    probes.push(
      {
        name: 'a body of the wrong media type',
        authenticated: true,
        headers: { 'Content-Type': 'text/plain' },
        body: 'hi',
      },
      { name: 'a body of the wrong shape', authenticated: true, headers: { 'Content-Type': type }, body: '[[]]' },
    );
  }
  if (req?.query) {
    // Every parameter given twice arrives as an array, which no scalar schema accepts.
    const query = Object.keys(req.query.shape)
      .map((key) => `${encodeURIComponent(key)}=a&${encodeURIComponent(key)}=b`)
      .join('&');
    probes.push({ name: 'repeated query parameters', authenticated: true, query });
  }
  if (req?.params) {
    probes.push(
      { name: 'an undecodable path parameter', authenticated: true, param: '%E0%A4%A' },
      { name: 'an overlong path parameter', authenticated: true, param: 'x'.repeat(2000) },
    );
  }
  return probes;
}

/** One raw HTTP request (fetch refuses a body on GET); streams are cut once their status is known. */
function send(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  // Node frames a GET or DELETE body only when told its length.
  const framing = body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: { ...headers, ...framing }, agent: false, timeout: 10_000 },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        const contentType = res.headers['content-type'] ?? '';
        if (status < 400) {
          res.destroy();
          const sessionId = res.headers['mcp-session-id'];
          resolve({ status, contentType, body: '', ...(typeof sessionId === 'string' && { sessionId }) });
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status, contentType, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} did not answer`)));
    req.on('error', reject);
    req.end(body);
  });
}

function urlFor(app: App, served: ServedRoute, probe: Probe): string {
  const path = `${served.group.prefix}${served.route.path}`.replace(/:(\w+)/g, () => probe.param ?? 'unknown-id');
  return `${app.url(served.listener)}${path}${probe.query ? `?${probe.query}` : ''}`;
}

function schemaOf(doc: Document, schema: Schema | undefined): Schema | undefined {
  const name = schema?.$ref?.replace('#/components/schemas/', '');
  return name ? doc.components.schemas[name] : schema;
}

/** What is wrong with this answer according to the description (nothing: undefined). */
function mismatch(doc: Document, operation: Operation, answer: Answer): string | undefined {
  if (answer.status >= 500 && answer.status !== 503) return `${answer.status}: ${answer.body}`;
  const documented = operation.responses[String(answer.status)];
  if (!documented) return `${answer.status} is not documented`;
  if (answer.status < 400 || !documented.content) return undefined;
  const type = answer.contentType.split(';')[0]!.trim();
  const media = documented.content[type];
  if (!media) return `${answer.status} answered ${type}, documented ${Object.keys(documented.content).join(', ')}`;
  // Pages (the MCP sign-in page's errors) are documented as HTML: only JSON bodies have fields to check.
  if (!/[/+]json$/.test(type)) return undefined;
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  const missing = (schemaOf(doc, media.schema)?.required ?? []).filter((key) => !(key in body));
  return missing.length > 0 ? `${answer.status} body lacks ${missing.join(', ')}: ${answer.body}` : undefined;
}

/** The status each error class renders as, in an area (a field-level ValidationError is 422 for data subjects). */
function statusOfError(name: string, area: ErrorArea): number | undefined {
  const ErrorClass = (errors as Record<string, unknown>)[name];
  if (typeof ErrorClass !== 'function') return undefined;
  const instance = new (ErrorClass as new (...args: unknown[]) => unknown)('probe', [], {});
  if (!(instance instanceof errors.AppError)) return undefined;
  if (area === 'data-subject' && instance.issues) return 422;
  return instance.status;
}

/** Statuses a handler's own source answers: errors it throws, replies and statuses it writes. */
function statusesInHandler(route: RouteDefinition, area: ErrorArea): Map<number, string> {
  const source = route.handler.toString();
  const found = new Map<number, string>();
  for (const [, name] of source.matchAll(/new (?:[\w$]+\.)?(\w+Error)\(/g)) {
    const status = statusOfError(name!, area);
    if (status) found.set(status, `throws ${name}`);
  }
  for (const [text, status] of source.matchAll(/(?:new Reply|jsonRpcError\(res,|\.status)\(?\s*(\d{3})\b/g)) {
    if (Number(status) >= 400) found.set(Number(status), text);
  }
  return found;
}

/**
 * What the framework puts around every route (src/http/listener.ts and mountRoutes in src/http/route.ts), stated
 * here on its own so that the description is checked against the code's behaviour, not against itself.
 */
function statusesOfFramework(route: RouteDefinition, area: ErrorArea): Map<number, string> {
  const statuses = new Map<number, string>([
    [400, 'JSON/form body parser (malformed body) and X-API-Version check, before routing'],
    [403, 'Host/Origin guard, before routing'],
    [413, 'body parser size limit, before routing'],
    [415, 'body parser (charset, Content-Encoding), before routing'],
    [500, 'error handler for anything unexpected'],
  ]);
  if (route.access === 'authenticated') statuses.set(401, 'authentication middleware');
  const req = route.request;
  if (req?.params || req?.query || req?.body) {
    statuses.set(area === 'data-subject' ? 422 : 400, 'schema validation of path, query or body');
  }
  if (req?.body) statuses.set(415, 'media type check of the body');
  return statuses;
}

let app: App;
let doc: Document;
let admin: string;
let routes: ServedRoute[];
/** What each route answered while the service was still starting. */
const duringStartup = new Map<ServedRoute, Answer>();
let closeLlm: () => Promise<void>;

beforeAll(async () => {
  // An LLM endpoint that holds the first health check, so start-up stays unfinished while every route is tried.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const startupReachedLlm = new Promise<void>((resolve) => (reached = resolve));
  let first = true;
  const llm = await serveOnLoopback((req, res) => {
    const answer = () =>
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(
          JSON.stringify({ object: 'list', data: [{ id: 'test-model', object: 'model', created: 0, owned_by: 't' }] }),
        );
    if (!req.url?.startsWith('/v1/models')) res.writeHead(404).end();
    else if (first) {
      first = false;
      reached();
      void held.then(answer);
    } else answer();
  });
  closeLlm = llm.close;
  app = buildTestApp({
    ADMIN_PASSWORD,
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: `${llm.url}/v1`,
    LLM_MODEL: 'test-model',
    LLM_API_KEY: 'test-key',
  });
  const started = app.start();
  try {
    await startupReachedLlm;
    routes = servedRoutes(app);
    // All at once: the held health check gives up after 5 s, and start-up with it.
    const answers = await Promise.all(
      routes.map((served) => send(urlFor(app, served, { name: 'start-up' }), served.route.method, {})),
    );
    routes.forEach((served, i) => duringStartup.set(served, answers[i]!));
  } finally {
    release();
    await started;
  }
  doc = (await (await fetch(`${app.url('main')}/openapi.json`)).json()) as Document;
  admin = await accessToken(app, 'admin', ADMIN_PASSWORD);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await closeLlm?.();
});

function operationOf(served: ServedRoute): Operation {
  const operation = doc.paths[served.path]?.[served.route.method];
  if (!operation) throw new Error(`${served.label} is served but not described`);
  return operation;
}

describe('every answer of the service is in its OpenAPI description', () => {
  it('answers every request the framework refuses with a documented status and body', async () => {
    const problems: string[] = [];
    for (const served of routes) {
      const operation = operationOf(served);
      for (const probe of probesFor(served.route)) {
        const headers = { ...probe.headers, ...(probe.authenticated && { Authorization: `Bearer ${admin}` }) };
        const answer = await send(urlFor(app, served, probe), served.route.method, headers, probe.body);
        const problem = mismatch(doc, operation, answer);
        if (problem) problems.push(`${served.label} with ${probe.name}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);

  it('documents the 503 of every route behind the start-up gate', () => {
    const problems: string[] = [];
    for (const [served, answer] of duringStartup) {
      const problem = mismatch(doc, operationOf(served), answer);
      if (problem) problems.push(`${served.label} while starting: ${problem}`);
    }
    expect(problems).toEqual([]);
    // The gate really stood in front of the API while the probes and metrics answered.
    const gated = [...duringStartup].filter(([, answer]) => answer.status === 503).map(([served]) => served.label);
    expect(gated).toEqual(expect.arrayContaining(['PATCH /api/v1/users/me', 'POST /mcp', 'GET /scim/v2/Users']));
    expect(gated).not.toContain('GET /metrics');
  });

  it('documents every status the middleware and handler of each route can raise', () => {
    // The source scan sees through the test build's module renaming (else it would silently find nothing).
    const eraseMe = routes.find((served) => served.label === 'DELETE /api/v1/users/me')!;
    expect(statusesInHandler(eraseMe.route, eraseMe.area).get(400)).toBe('throws BadRequestError');
    const problems: string[] = [];
    for (const served of routes) {
      const documented = operationOf(served).responses;
      const expected = new Map([
        ...statusesOfFramework(served.route, served.area),
        ...statusesInHandler(served.route, served.area),
      ]);
      for (const status of Object.keys(served.route.responses)) expected.set(Number(status), 'declared');
      for (const [status, cause] of expected) {
        if (!documented[String(status)]) problems.push(`${served.label}: ${status} (${cause}) is not documented`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('answers the refusals of the MCP transports themselves with documented statuses', async () => {
    const result = await probeMcpWires(app, admin, doc);
    expect(result.problems).toEqual([]);
    // The probes reached the transports' own checks, not just the framework's.
    expect(result.statuses).toEqual(expect.arrayContaining([400, 404, 406]));
  });

  it('describes only served routes, and knows every page it serves outside them', async () => {
    const described = new Set(routes.map((served) => `${served.route.method} ${served.path}`));
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) expect(described, `${method} ${path}`).toContain(`${method} ${path}`);
    }
    for (const path of Object.keys(OUTSIDE_THE_DESCRIPTION)) expect(doc.paths[path], path).toBeUndefined();
    for (const path of ['/openapi.json', '/docs', '/docs/init.js', '/redoc']) {
      expect((await fetch(`${app.url('main')}${path}`)).status, path).toBe(200);
    }
    const upgrade = await send(`${app.url('main')}/mcp/ws`, 'GET', {
      Connection: 'Upgrade',
      Upgrade: 'websocket',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    });
    expect(upgrade.status).toBe(401);
  });
});

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
});
const TOOLS_LIST = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
const BOTH = 'application/json, text/event-stream';

/** Requests each MCP transport refuses on its own (session, Accept, JSON-RPC, budget); what they answered. */
async function probeMcpWires(target: App, token: string, description: Document) {
  const base = target.url('main');
  const auth = { Authorization: `Bearer ${token}` };
  const json = { ...auth, 'Content-Type': 'application/json' };
  const opened = await send(`${base}/mcp`, 'POST', { ...json, Accept: BOTH }, INITIALIZE);
  const session: Record<string, string> = opened.sessionId ? { 'Mcp-Session-Id': opened.sessionId } : {};
  const probes: [string, string, Record<string, string>, string?][] = [
    ['POST', '/mcp', { ...json, Accept: 'application/json' }, INITIALIZE],
    ['POST', '/mcp', { ...json, Accept: BOTH }, TOOLS_LIST],
    ['POST', '/mcp', { ...json, Accept: BOTH, 'Mcp-Session-Id': 'no-such-session' }, TOOLS_LIST],
    ['POST', '/mcp', { ...json, Accept: BOTH, ...session }, '{"not":"json-rpc"}'],
    ['POST', '/mcp', { ...json, Accept: BOTH, ...session }, INITIALIZE],
    ['POST', '/mcp', { ...json, Accept: BOTH }, INITIALIZE],
    ['GET', '/mcp', { ...auth, Accept: 'text/event-stream' }],
    ['GET', '/mcp', { ...auth, Accept: 'text/event-stream', 'Mcp-Session-Id': 'no-such-session' }],
    ['GET', '/mcp', { ...auth, Accept: 'application/json', ...session }],
    ['DELETE', '/mcp', auth],
    ['DELETE', '/mcp', { ...auth, 'Mcp-Session-Id': 'no-such-session' }],
    ['POST', '/messages?sessionId=no-such-session', json, TOOLS_LIST],
    ['POST', '/mcp/resources/read', json, JSON.stringify({ params: { uri: 'conversation://no-such-conversation' } })],
    ['POST', '/mcp/prompts/get', json, JSON.stringify({ params: { name: 'no-such-prompt' } })],
    ['POST', '/mcp/tools/call', json, JSON.stringify({ params: { name: 'no-such-tool' } })],
    ['POST', '/mcp/tools/list', json, '{}'],
    ['GET', '/tools', auth],
    ['POST', '/mcp/initialize', json, '{}'],
  ];
  const problems: string[] = [];
  const statuses = new Set<number>();
  for (const [method, path, headers, body] of probes) {
    const answer = await send(`${base}${path}`, method, headers, body);
    statuses.add(answer.status);
    const operation = description.paths[path.split('?')[0]!]?.[method.toLowerCase()];
    const problem = operation ? mismatch(description, operation, answer) : 'not described';
    if (problem) problems.push(`${method} ${path} ${body ?? ''}: ${problem}`);
  }
  return { problems, statuses: [...statuses] };
}

describe('the MCP budgets', () => {
  let limited: App;
  let limitedAdmin: string;
  let limitedDoc: Document;

  beforeAll(async () => {
    limited = buildTestApp({ ADMIN_PASSWORD, MCP_REQUESTS_PER_MINUTE: '1', MCP_MAX_SESSIONS: '1' });
    await limited.start();
    limitedAdmin = await accessToken(limited, 'admin', ADMIN_PASSWORD);
    limitedDoc = (await (await fetch(`${limited.url('main')}/openapi.json`)).json()) as Document;
  });
  afterAll(() => limited?.close());

  it('answers an exhausted request budget and a full session table with documented statuses', async () => {
    const result = await probeMcpWires(limited, limitedAdmin, limitedDoc);
    expect(result.problems).toEqual([]);
    expect(result.statuses).toEqual(expect.arrayContaining([429]));
  });
});
