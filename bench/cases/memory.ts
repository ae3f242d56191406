import { JSON_HEADERS, openMcpSession, pool } from '../client.js';
import type { Context } from '../context.js';
import { failures, runLoad } from '../load.js';
import type { Child } from '../processes.js';
import { type Row, valueRow } from '../report.js';

/**
 * Memory of the service child against the bare SDK baseline child, read after a full GC in each (the probe):
 * resident set size (VmRSS from /proc) idle and after load, the heap each idle MCP session holds, and heap growth
 * over many requests once warm (a leak check).
 */

const SECTION = 'Memory (after a full GC in the child; RSS from /proc/<pid>/status)';
const MB = 1024 * 1024;

/** RSS in MB after a full GC (the probe collects, then /proc is read). */
export async function rssAfterGc(child: Child): Promise<number> {
  await child.memory();
  return child.rssMb();
}

/**
 * The RSS of a child that has been left idle: V8 keeps the young generation it grew during start-up (up to 32 MB)
 * until its memory reducer runs, some 10–20 s into idleness, and an idle server is one that has been idle. This
 * waits (at most `IDLE_WAIT_MS`) until the child's RSS has fallen by a tenth from its first reading and held for two
 * seconds, or the wait is over, and then reads it after a full GC. Returns the RSS and how long it waited.
 */
const IDLE_WAIT_MS = 30_000;
export async function settledRss(child: Child): Promise<{ mb: number; waitedMs: number; firstMb: number }> {
  const began = performance.now();
  const firstMb = child.rssMb();
  let stableSince: number | undefined;
  let last = firstMb;
  while (performance.now() - began < IDLE_WAIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const now = child.rssMb();
    if (now < firstMb * 0.9 && Math.abs(now - last) < 1) stableSince ??= performance.now();
    else stableSince = undefined;
    last = now;
    if (stableSince !== undefined && performance.now() - stableSince >= 2_000) break;
  }
  return { mb: await rssAfterGc(child), waitedMs: performance.now() - began, firstMb };
}

export async function rssRow(label: string, service: Child, baseline: Child, max: number | null): Promise<Row> {
  const [ours, theirs] = [await rssAfterGc(service), await rssAfterGc(baseline)];
  return valueRow(SECTION, `RSS ${label} (baseline: bare SDK)`, ours, 'MB', max, { baseline: theirs });
}

/** RSS idle: each child left idle until V8 has given back what start-up grew (see `settledRss`), then read. */
export async function idleRssRow(service: Child, baseline: Child, max: number): Promise<Row> {
  const [ours, theirs] = await Promise.all([settledRss(service), settledRss(baseline)]);
  return valueRow(SECTION, 'RSS idle, settled (baseline: bare SDK)', ours.mb, 'MB', max, {
    baseline: theirs.mb,
    note:
      `read after ${(ours.waitedMs / 1000).toFixed(0)} s idle (${ours.firstMb.toFixed(1)} MB at first); ` +
      `bare SDK after ${(theirs.waitedMs / 1000).toFixed(0)} s (${theirs.firstMb.toFixed(1)} MB at first)`,
  });
}

async function heapUsed(child: Child): Promise<number> {
  return (await child.memory()).heapUsed;
}

/** Heap per idle streamable HTTP session: `count` sessions opened (initialize + initialized) and left open. */
export async function sessionHeapRow(
  ctx: Context,
  service: { child: Child; mcp: string; headers: Record<string, string> },
  baseline: { child: Child; mcp: string },
): Promise<Row> {
  const count = ctx.settings.sessions;
  const perSession = async (child: Child, url: string, headers: Record<string, string>) => {
    await pool(Array.from({ length: 20 }), 10, () => openMcpSession(url, headers)); // warm the code paths
    const before = await heapUsed(child);
    await pool(Array.from({ length: count }), 20, () => openMcpSession(url, headers));
    return (await heapUsed(child)) - before;
  };
  ctx.log(`memory: opening ${count} idle MCP sessions in the service and in the bare SDK`);
  const ours = (await perSession(service.child, service.mcp, service.headers)) / count / 1024;
  const theirs = (await perSession(baseline.child, baseline.mcp, {})) / count / 1024;
  return valueRow(SECTION, `heap per idle MCP session (${count} opened)`, ours, 'KB', 8, { baseline: theirs });
}

/**
 * Heap growth per 100,000 requests once warm: the REST-style `POST /mcp/tools/call` with Bearer (authentication,
 * MCP policy, the tool, request logging) at 50 connections. Quick mode makes fewer requests and scales. (The
 * streamable HTTP route keeps a bounded resumability store that needs over 10,000 requests just to fill.)
 */
export async function heapGrowthRow(
  ctx: Context,
  service: { child: Child; main: string; headers: Record<string, string> },
  tool: { name: string; arguments: unknown },
): Promise<Row> {
  const { heapRequests, heapWarmup } = ctx.settings;
  const target = {
    name: 'heap growth',
    url: `${service.main}/mcp/tools/call`,
    method: 'POST' as const,
    headers: { ...service.headers, ...JSON_HEADERS },
    body: JSON.stringify({ method: 'tools/call', params: tool }),
    connections: 50,
  };
  ctx.log(`memory: heap growth over ${heapRequests} POST /mcp/tools/call after ${heapWarmup} warm-up requests`);
  const warm = await runLoad(target, { amount: heapWarmup });
  const before = await heapUsed(service.child);
  const load = await runLoad(target, { amount: heapRequests });
  const after = await heapUsed(service.child);
  const perHundredThousand = ((after - before) / MB) * (100_000 / heapRequests);
  const bad = failures(warm) + failures(load);
  return valueRow(SECTION, 'heap growth per 100,000 POST /mcp/tools/call', perHundredThousand, 'MB', 1, {
    note: `${(after - before) / 1024 > 0 ? '+' : ''}${((after - before) / 1024).toFixed(0)} KB over ${heapRequests} requests${heapRequests === 100_000 ? '' : ', scaled to 100,000'}`,
    ...(bad > 0 && { failed: `${bad} errors/non-2xx answers` }),
  });
}
