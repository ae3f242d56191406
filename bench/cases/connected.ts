import { randomBytes } from 'node:crypto';
import { startBaseline } from '../baseline-servers.js';
import {
  JSON_HEADERS,
  MCP_ACCEPT,
  adminToken,
  bearer,
  checkOk,
  checkToolCall,
  openMcpSession,
  rpc,
  rpcTemplate,
} from '../client.js';
import type { Context } from '../context.js';
import { type Target, interleavedRounds, runLoad } from '../load.js';
import type { Child } from '../processes.js';
import { type Rows, throughputRow, valueRow } from '../report.js';
import { freshDatabase, startService } from '../service.js';

/**
 * A connected tool called through the service against the same tool called directly, both authenticated, at
 * c=10, in interleaved rounds. The upstream (bench/baselines/upstream-mcp.ts: the SDK's stateful streamable HTTP
 * server with an `echo` tool, demanding a bearer token) runs pinned beside the service, so the ratio counts every
 * CPU cycle the service adds to a call. The direct path is a `tools/call echo` with the upstream's token in an
 * initialized session of the upstream; the service path is a `tools/call bench__echo` with an administrator's
 * Bearer JWT in an initialized session of the service's /mcp, forwarded to the upstream through a shared gateway
 * connection (bearer credential) that the administrator registers through /api/v1/connections. The service runs on
 * a database of its own with `CONNECTIONS_PRIVATE_HOSTS=127.0.0.1`, so that no other case sees the connection.
 * The service's own MCP `tools/call` at c=10 is reported beside, to tell the gateway's share from MCP's. Then
 * one more run of each measures CPU time per call in the service's and the upstream's processes (/proc): on a
 * machine shared with other work, a steadier account of what the service adds than req/s.
 */

export const SECTION_CONNECTED = 'Connected tool call (gateway), c=10, vs the same upstream tool called directly';
const SLUG = 'bench';
const ECHO = { name: 'echo', arguments: { text: 'benchmark' } };
const GATEWAY_ECHO = { name: `${SLUG}__echo`, arguments: ECHO.arguments };
const OWN_TOOL = { name: 'conversation_search', arguments: { query: 'benchmark', limit: 1 } };
const C = 10;

/** CPU microseconds per answered call in each process over one run of `seconds`, then the answered calls. */
async function cpuPerCall(target: Target, seconds: number, children: Child[]): Promise<number[]> {
  const before = children.map((child) => child.cpuSeconds());
  const stats = await runLoad(target, { seconds });
  const perCall = children.map((child, i) => ((child.cpuSeconds() - before[i]!) * 1e6) / Math.max(1, stats.ok));
  return [...perCall, stats.ok];
}

/** A `tools/call` body whose JSON-RPC id the load generator sets per request (ids must not repeat in a session). */
const toolCall = (tool: { name: string; arguments: unknown }) => rpcTemplate('tools/call', tool);

export async function connectedToolRows(ctx: Context): Promise<Rows> {
  const token = randomBytes(24).toString('base64url');
  const upstream = await startBaseline('upstream-mcp', ctx.logDir, { UPSTREAM_BEARER: token });
  const upstreamMcp = `${upstream.url}/mcp`;
  try {
    const database = await freshDatabase(ctx.tmp, 'connected');
    const service = await startService({
      name: 'service-connected',
      database,
      logDir: ctx.logDir,
      env: { CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1' },
    });
    try {
      const admin = bearer(await adminToken(service.main));
      const created = JSON.parse(
        await checkOk('register the connection', `${service.main}/api/v1/connections`, {
          method: 'POST',
          headers: { ...admin, ...JSON_HEADERS },
          body: JSON.stringify({
            name: 'Bench upstream',
            slug: SLUG,
            scope: 'shared',
            transport: 'streamable_http',
            url: upstreamMcp,
            auth: { kind: 'bearer', secret: token },
            gateway: true,
          }),
        }),
      ) as { id: string };
      // Connects and lists the upstream: its tools are pinned (approved) here, not under load.
      const tested = await checkOk('test the connection', `${service.main}/api/v1/connections/${created.id}/test`, {
        method: 'POST',
        headers: admin,
      });
      if (!(JSON.parse(tested) as { ok?: boolean }).ok) throw new Error(`connection test failed: ${tested}`);

      const session = async (url: string, headers: Record<string, string>) => ({
        ...headers,
        ...JSON_HEADERS,
        Accept: MCP_ACCEPT,
        'Mcp-Session-Id': await openMcpSession(url, headers),
      });
      const mcp = `${service.main}/mcp`;
      const directSession = await session(upstreamMcp, bearer(token));
      const serviceSession = await session(mcp, admin);
      // Without the token the upstream refuses: the direct path pays for the same check the service's path does.
      const refused = await fetch(upstreamMcp, {
        method: 'POST',
        headers: { ...directSession, Authorization: 'Bearer wrong' },
        body: rpc(2, 'tools/call', ECHO),
      });
      await refused.arrayBuffer();
      if (refused.status !== 401) throw new Error(`the upstream answered ${refused.status} to a wrong token, not 401`);
      await checkToolCall(upstreamMcp, directSession, ECHO.name, ECHO.arguments);
      await checkToolCall(mcp, serviceSession, GATEWAY_ECHO.name, GATEWAY_ECHO.arguments);
      await checkToolCall(mcp, serviceSession, OWN_TOOL.name, OWN_TOOL.arguments);

      const direct: Target = {
        name: 'upstream echo, direct',
        url: upstreamMcp,
        method: 'POST',
        headers: directSession,
        bodyTemplate: toolCall(ECHO),
        connections: C,
      };
      const gateway: Target = {
        name: 'upstream echo, through the service',
        url: mcp,
        method: 'POST',
        headers: serviceSession,
        bodyTemplate: toolCall(GATEWAY_ECHO),
        connections: C,
      };
      const own: Target = {
        name: 'service own tool',
        url: mcp,
        method: 'POST',
        headers: serviceSession,
        bodyTemplate: toolCall(OWN_TOOL),
        connections: C,
      };
      ctx.log(
        `connected tool call: 3 targets x ${ctx.settings.rounds} interleaved rounds of ${ctx.settings.seconds} s`,
      );
      const stats = await interleavedRounds([direct, gateway, own], ctx.settings);
      const s = (target: Target) => stats.get(target.name)!;
      const seconds = Math.max(2, ctx.settings.seconds);
      ctx.log(`connected tool call: CPU per call, one run of ${seconds} s each`);
      const processes = [service.child, upstream.child];
      const [, directUpstream = 0] = await cpuPerCall(direct, seconds, processes);
      const echoes = async () =>
        (JSON.parse(await checkOk('upstream calls', `${upstream.url}/calls`)) as { echo: number }).echo;
      const echoesBefore = await echoes();
      const [gatewayService = 0, gatewayUpstream = 0, gatewayOk = 0] = await cpuPerCall(gateway, seconds, processes);
      // A failed forward is still an HTTP 200 (a tool result with isError): count what reached the upstream.
      const lost = gatewayOk - ((await echoes()) - echoesBefore);
      const [ownService = 0] = await cpuPerCall(own, seconds, processes);
      const us = (value: number) => `${value.toFixed(0)} µs`;
      const through = throughputRow(
        SECTION_CONNECTED,
        `${GATEWAY_ECHO.name} through the service, Bearer JWT`,
        s(gateway),
        s(direct),
        0.8,
      );
      if (lost > 0) {
        through.pass = false;
        through.note = [through.note, `${lost} of ${gatewayOk} answers never reached the upstream (tool errors)`]
          .filter(Boolean)
          .join('; ');
      }
      return [
        through,
        throughputRow(
          SECTION_CONNECTED,
          'echo called directly, upstream bearer (baseline)',
          s(direct),
          s(direct),
          null,
        ),
        throughputRow(
          SECTION_CONNECTED,
          `service's own ${OWN_TOOL.name} (no upstream) vs direct`,
          s(own),
          s(direct),
          null,
          'where the gateway call stands against MCP through the service without an upstream',
        ),
        valueRow(
          SECTION_CONNECTED,
          'CPU per call, through the service vs direct',
          gatewayService + gatewayUpstream,
          'µs',
          null,
          {
            baseline: directUpstream,
            note: `through the service: service ${us(gatewayService)} + upstream ${us(gatewayUpstream)}; direct: upstream ${us(directUpstream)} (/proc utime+stime, 10 ms ticks)`,
          },
        ),
        valueRow(SECTION_CONNECTED, 'service CPU per gateway call vs per own tools/call', gatewayService, 'µs', null, {
          baseline: ownService,
          note: `what forwarding adds in the service beyond its own MCP tools/call (${OWN_TOOL.name}, ${us(ownService)})`,
        }),
      ];
    } finally {
      await service.stop();
    }
  } finally {
    await upstream.child.stop();
  }
}
