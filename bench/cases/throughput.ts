import {
  JSON_HEADERS,
  MCP_ACCEPT,
  adminToken,
  bearer,
  checkOk,
  checkToolCall,
  openMcpSession,
  rpc,
  rpcMessages,
  rpcTemplate,
} from '../client.js';
import type { Context } from '../context.js';
import { type Stats, type Target, interleavedRounds } from '../load.js';
import { type Rows, loadRow, tailRow, throughputRow } from '../report.js';
import { type Service, freshDatabase, startService } from '../service.js';

/**
 * Request throughput of the service's hot paths against the baseline that does the least the same request needs,
 * all measured in interleaved rounds in one pass: MCP `tools/call` in a stateful streamable HTTP session (Bearer
 * JWT and X-API-Key, at 50 and 1 connections) against the bare SDK server's no-op tool, on the service as started
 * (`MCP_HTTP_TRANSPORT` unset: the native transport) and, Bearer at 50 connections, on a second instance started
 * with `MCP_HTTP_TRANSPORT=sdk` (the SDK's transport) against the same baseline; `tools/list` at 50 connections
 * (reported); the 2026-07-28 revision's stateless `tools/call` against a bare `createMcpHandler`; the REST-style
 * `POST /mcp/tools/call` against a raw node:http POST; `GET /auth/me`, `GET /health/live` and the playground and
 * builder listings against an express hello route. Then p99/p50 at 50 connections for each.
 */

/** A cheap read-only tool every user may call: searching one's own (here: no) conversations. */
const TOOL = { name: 'conversation_search', arguments: { query: 'benchmark', limit: 1 } };
const NOOP = { name: 'noop', arguments: { query: 'benchmark' } };

/** Each request of a session needs its own JSON-RPC id (the SDK routes answers by id): the load generator sets it. */
const toolCall = (tool: { name: string; arguments: unknown }) => rpcTemplate('tools/call', tool);

/** The 2026-07-28 revision: no session; every request carries its revision, client and capabilities. */
const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const modernHeaders = (tool: { name: string }) => ({
  ...JSON_HEADERS,
  Accept: MCP_ACCEPT,
  'MCP-Protocol-Version': MODERN,
  'Mcp-Method': 'tools/call',
  'Mcp-Name': tool.name,
});
const modernCall = (tool: { name: string; arguments: unknown }) =>
  rpcTemplate('tools/call', { ...tool, _meta: ENVELOPE });

export interface Credentials {
  token: string;
  apiKey: string;
}

const SECTION_MCP = 'MCP tools/call, streamable HTTP (stateful), vs bare SDK McpServer (no auth, no-op tool)';
const SECTION_MODERN =
  'MCP tools/call, 2026-07-28 revision (stateless), vs bare SDK createMcpHandler (no auth, no-op tool)';
const SECTION_HTTP = 'HTTP routes vs baselines (express hello, raw node:http)';
const SECTION_TAIL = 'Tail latency at 50 connections: p99/p50';
/** MCP `tools/call` at 50 connections: p99/p50 at most 4, and p99 at most 100 ms. */
const MCP_TAIL = { ratio: 4, p99Ms: 100 };

export interface ThroughputResult {
  rows: Rows;
  stats: Map<string, Stats>;
}

/**
 * Starts a second instance with `MCP_HTTP_TRANSPORT=sdk` on a database of its own for the time of the case (only
 * this case pays for it), then measures.
 */
export async function throughputCases(ctx: Context, service: Service, creds: Credentials): Promise<ThroughputResult> {
  const database = await freshDatabase(ctx.tmp, 'main-sdk-transport');
  const sdk = await startService({
    name: 'service-sdk-transport',
    database,
    logDir: ctx.logDir,
    env: { MCP_HTTP_TRANSPORT: 'sdk' },
  });
  try {
    ctx.log(`service with MCP_HTTP_TRANSPORT=sdk ready in ${sdk.startupMs.toFixed(0)} ms at ${sdk.main}`);
    return await measure(ctx, service, sdk, creds);
  } finally {
    await sdk.stop();
  }
}

async function measure(ctx: Context, service: Service, sdk: Service, creds: Credentials): Promise<ThroughputResult> {
  const mcp = `${service.main}/mcp`;
  const sdkMcp = `${sdk.main}/mcp`;
  const bareMcp = `${ctx.bareMcp.url}/mcp`;
  const bareModern = `${ctx.bareMcpModern.url}/mcp`;
  const auth = bearer(creds.token);
  const key = { 'X-API-Key': creds.apiKey };

  // One session per client, as a client would hold it; every request a tools/call in it.
  const session = async (url: string, headers: Record<string, string>) => ({
    ...headers,
    ...JSON_HEADERS,
    Accept: MCP_ACCEPT,
    'Mcp-Session-Id': await openMcpSession(url, headers),
  });
  const bearerSession = await session(mcp, auth);
  const keySession = await session(mcp, key);
  const bareSession = await session(bareMcp, {});
  const sdkSession = await session(sdkMcp, bearer(await adminToken(sdk.main)));
  await checkToolCall(mcp, bearerSession, TOOL.name, TOOL.arguments);
  await checkToolCall(mcp, keySession, TOOL.name, TOOL.arguments);
  await checkToolCall(sdkMcp, sdkSession, TOOL.name, TOOL.arguments);
  await checkToolCall(bareMcp, bareSession, NOOP.name, NOOP.arguments);
  const listed = rpcMessages(
    await checkOk('MCP tools/list', mcp, { method: 'POST', headers: bearerSession, body: rpc(1, 'tools/list', {}) }),
  ).find((m) => m.id === 1)?.result as { tools?: unknown[] } | undefined;
  if (!listed?.tools?.length) throw new Error('MCP tools/list answered no tools');
  const modernService = { ...auth, ...modernHeaders(TOOL) };
  const modernBare = modernHeaders(NOOP);
  await checkToolCall(mcp, modernService, TOOL.name, { ...TOOL.arguments }, ENVELOPE);
  await checkToolCall(bareModern, modernBare, NOOP.name, { ...NOOP.arguments }, ENVELOPE);

  const restBody = JSON.stringify({ method: 'tools/call', params: TOOL });
  const restText = await checkOk('POST /mcp/tools/call', `${service.main}/mcp/tools/call`, {
    method: 'POST',
    headers: { ...auth, ...JSON_HEADERS },
    body: restBody,
  });
  if (restText.includes('"isError":true')) throw new Error(`POST /mcp/tools/call failed: ${restText.slice(0, 300)}`);
  const rawBody = JSON.stringify({ method: 'tools/call', params: TOOL });
  for (const [what, url, headers] of [
    ['GET /auth/me', `${service.main}/auth/me`, auth],
    ['GET /auth/me (API key)', `${service.main}/auth/me`, key],
    ['GET /health/live', `${service.main}/health/live`, {}],
    ['GET /api/playground/sessions', `${service.playground}/api/playground/sessions`, auth],
    ['GET /api/builder/workflows', `${service.builder}/api/builder/workflows`, auth],
    ['express hello', `${ctx.express.url}/hello`, {}],
  ] as const)
    await checkOk(what, url, { headers });

  const c50 = 50;
  const targets = {
    express: { name: 'express hello', url: `${ctx.express.url}/hello`, connections: c50 },
    me: { name: 'GET /auth/me', url: `${service.main}/auth/me`, headers: auth, connections: c50 },
    live: { name: 'GET /health/live', url: `${service.main}/health/live`, connections: c50 },
    playground: {
      name: 'GET /api/playground/sessions',
      url: `${service.playground}/api/playground/sessions`,
      headers: auth,
      connections: c50,
    },
    builder: {
      name: 'GET /api/builder/workflows',
      url: `${service.builder}/api/builder/workflows`,
      headers: auth,
      connections: c50,
    },
    rawGet: { name: 'raw node:http GET', url: `${ctx.raw.url}/`, connections: c50 },
    rawPost: {
      name: 'raw node:http POST',
      url: `${ctx.raw.url}/`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: rawBody,
      connections: c50,
    },
    rest: {
      name: 'POST /mcp/tools/call',
      url: `${service.main}/mcp/tools/call`,
      method: 'POST',
      headers: { ...auth, ...JSON_HEADERS },
      body: restBody,
      connections: c50,
    },
    bare50: { name: 'bare SDK c=50', url: bareMcp, method: 'POST', headers: bareSession, connections: c50 },
    bearer50: { name: 'service Bearer c=50', url: mcp, method: 'POST', headers: bearerSession, connections: c50 },
    sdk50: {
      name: 'service (MCP_HTTP_TRANSPORT=sdk) Bearer c=50',
      url: sdkMcp,
      method: 'POST',
      headers: sdkSession,
      connections: c50,
    },
    list50: { name: 'service tools/list c=50', url: mcp, method: 'POST', headers: bearerSession, connections: c50 },
    key50: { name: 'service X-API-Key c=50', url: mcp, method: 'POST', headers: keySession, connections: c50 },
    bare1: { name: 'bare SDK c=1', url: bareMcp, method: 'POST', headers: bareSession, connections: 1 },
    bearer1: { name: 'service Bearer c=1', url: mcp, method: 'POST', headers: bearerSession, connections: 1 },
    key1: { name: 'service X-API-Key c=1', url: mcp, method: 'POST', headers: keySession, connections: 1 },
    modernBare50: {
      name: 'bare SDK 2026 c=50',
      url: bareModern,
      method: 'POST',
      headers: modernBare,
      connections: c50,
    },
    modern50: { name: 'service 2026 Bearer c=50', url: mcp, method: 'POST', headers: modernService, connections: c50 },
  } satisfies Record<string, Target>;
  const withBody = (target: Target, bodyTemplate: string): Target => ({ ...target, bodyTemplate });
  const order: Target[] = [
    targets.express,
    targets.me,
    targets.live,
    targets.playground,
    targets.builder,
    targets.rawGet,
    targets.rawPost,
    targets.rest,
    withBody(targets.bare50, toolCall(NOOP)),
    withBody(targets.bearer50, toolCall(TOOL)),
    withBody(targets.sdk50, toolCall(TOOL)),
    withBody(targets.key50, toolCall(TOOL)),
    withBody(targets.list50, rpcTemplate('tools/list', {})),
    withBody(targets.bare1, toolCall(NOOP)),
    withBody(targets.bearer1, toolCall(TOOL)),
    withBody(targets.key1, toolCall(TOOL)),
    withBody(targets.modernBare50, modernCall(NOOP)),
    withBody(targets.modern50, modernCall(TOOL)),
  ];
  ctx.log(
    `throughput: ${order.length} targets x ${ctx.settings.rounds} interleaved rounds of ${ctx.settings.seconds} s`,
  );
  const stats = await interleavedRounds(order, ctx.settings);
  const s = (target: Target) => stats.get(target.name)!;

  const rows: Rows = [
    throughputRow(SECTION_MCP, 'Bearer JWT, c=50', s(targets.bearer50), s(targets.bare50), 1.0),
    throughputRow(
      SECTION_MCP,
      'Bearer JWT, c=50, MCP_HTTP_TRANSPORT=sdk',
      s(targets.sdk50),
      s(targets.bare50),
      1.0,
      'a second instance, started with MCP_HTTP_TRANSPORT=sdk',
    ),
    throughputRow(SECTION_MCP, 'X-API-Key, c=50', s(targets.key50), s(targets.bare50), 1.0),
    throughputRow(SECTION_MCP, 'Bearer JWT, c=1', s(targets.bearer1), s(targets.bare1), 1.0),
    throughputRow(SECTION_MCP, 'X-API-Key, c=1', s(targets.key1), s(targets.bare1), 1.0),
    throughputRow(SECTION_MCP, 'bare SDK (baseline), c=50', s(targets.bare50), s(targets.bare50), null),
    loadRow(SECTION_MCP, 'tools/list, Bearer JWT, c=50 (reported)', s(targets.list50)),
    throughputRow(SECTION_MODERN, 'Bearer JWT, c=50', s(targets.modern50), s(targets.modernBare50), 1.0),
    throughputRow(SECTION_MODERN, 'bare SDK (baseline), c=50', s(targets.modernBare50), s(targets.modernBare50), null),
    throughputRow(
      SECTION_MODERN,
      'bare SDK 2026 vs bare SDK 2025, c=50',
      s(targets.modernBare50),
      s(targets.bare50),
      null,
    ),
    throughputRow(SECTION_HTTP, 'POST /mcp/tools/call (REST) vs raw POST', s(targets.rest), s(targets.rawPost), 0.08),
    throughputRow(SECTION_HTTP, 'GET /auth/me Bearer vs express', s(targets.me), s(targets.express), 0.75),
    throughputRow(SECTION_HTTP, 'GET /health/live vs express', s(targets.live), s(targets.express), 0.9),
    throughputRow(
      SECTION_HTTP,
      'GET /api/playground/sessions vs express',
      s(targets.playground),
      s(targets.express),
      0.5,
    ),
    throughputRow(SECTION_HTTP, 'GET /api/builder/workflows vs express', s(targets.builder), s(targets.express), 0.5),
    throughputRow(SECTION_HTTP, 'express hello (baseline)', s(targets.express), s(targets.express), null),
    throughputRow(SECTION_HTTP, 'raw node:http GET (baseline)', s(targets.rawGet), s(targets.express), null),
    throughputRow(SECTION_HTTP, 'raw node:http POST (baseline)', s(targets.rawPost), s(targets.express), null),
  ];
  const tails: [string, Target, Target | null, number | null, number?][] = [
    ['MCP tools/call Bearer', targets.bearer50, targets.bare50, MCP_TAIL.ratio, MCP_TAIL.p99Ms],
    ['MCP tools/call Bearer, MCP_HTTP_TRANSPORT=sdk', targets.sdk50, targets.bare50, MCP_TAIL.ratio, MCP_TAIL.p99Ms],
    ['MCP tools/call X-API-Key', targets.key50, targets.bare50, MCP_TAIL.ratio, MCP_TAIL.p99Ms],
    ['MCP tools/call 2026-07-28 Bearer', targets.modern50, targets.modernBare50, MCP_TAIL.ratio, MCP_TAIL.p99Ms],
    ['MCP tools/list Bearer (reported)', targets.list50, null, null],
    ['POST /mcp/tools/call', targets.rest, targets.rawPost, 4],
    ['GET /auth/me', targets.me, targets.express, 4],
    ['GET /health/live', targets.live, targets.express, 4],
    ['GET /api/playground/sessions', targets.playground, targets.express, 4],
    ['GET /api/builder/workflows', targets.builder, targets.express, 4],
    ['bare SDK (baseline)', targets.bare50, null, null],
    ['express hello (baseline)', targets.express, null, null],
    ['raw node:http GET (baseline)', targets.rawGet, null, null],
    ['raw node:http POST (baseline)', targets.rawPost, null, null],
  ];
  for (const [name, subject, baseline, max, maxP99] of tails)
    rows.push(tailRow(SECTION_TAIL, name, s(subject), baseline && s(baseline), max, maxP99));
  return { rows, stats };
}
