import { readFileSync } from 'node:fs';
import { Agent, type ClientRequest, request } from 'node:http';
import { pool } from '../client.js';
import type { Context } from '../context.js';
import type { Child } from '../processes.js';
import { type Row, notRunRow, valueRow } from '../report.js';
import { rssAfterGc } from './memory.js';

/**
 * Many long-lived MCP event streams at once: legacy SSE `GET /sse` (one request per stream, each with its own MCP
 * server in the service), opened through one keep-alive agent with unlimited sockets and held open while the
 * service's RSS is read. The target is stated for 10,000 streams; with fewer (`--quick`), the RSS is projected.
 */

const SECTION = 'Concurrent SSE streams (GET /sse, Bearer)';
const STATED = 10_000;

function openStream(agent: Agent, url: URL, token: string): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: '/sse',
        agent,
        headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /sse answered ${res.statusCode}`));
          return;
        }
        // Open once the first event (`endpoint`) has arrived; then keep reading whatever comes.
        res.once('data', () => resolve(req));
        res.on('data', () => undefined);
        res.on('error', () => undefined);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The soft limit of open files of this process (what `ulimit -n` shows), undefined when unlimited. */
function fdLimit(): number | undefined {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const soft = line?.split(/\s{2,}/)[1];
  return soft === undefined || soft === 'unlimited' ? undefined : Number(soft);
}

export async function sseStreamsRow(
  ctx: Context,
  service: { child: Child; main: string },
  token: string,
): Promise<Row> {
  const count = ctx.settings.streams;
  const name = `RSS with ${STATED.toLocaleString('en')} open streams${count === STATED ? '' : ` (projected from ${count.toLocaleString('en')})`}`;
  const limit = fdLimit();
  if (limit !== undefined && limit < count + 500)
    return notRunRow(SECTION, name, `ulimit -n is ${limit}: too few file descriptors for ${count} streams`);

  const before = await rssAfterGc(service.child);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const url = new URL(service.main);
  ctx.log(`streams: opening ${count} SSE streams`);
  const began = performance.now();
  const open: ClientRequest[] = [];
  try {
    await pool(Array.from({ length: count }), 200, async () => {
      open.push(await openStream(agent, url, token));
    });
    const seconds = (performance.now() - began) / 1000;
    const withStreams = await rssAfterGc(service.child);
    const perStream = ((withStreams - before) * 1024) / count;
    const projected = before + ((withStreams - before) * STATED) / count;
    return valueRow(SECTION, name, projected, 'MB', 300, {
      baseline: before,
      note: `${count} streams opened in ${seconds.toFixed(1)} s; RSS ${before.toFixed(1)} MB before, ${withStreams.toFixed(1)} MB with them (${perStream.toFixed(1)} KB per stream); baseline column = RSS before`,
    });
  } finally {
    for (const req of open) req.destroy();
    agent.destroy();
  }
}
