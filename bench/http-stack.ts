import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { startBenchApp } from './app.js';
import { type LoadResult, load } from './load.js';

/**
 * What the shared HTTP plumbing (request ids, request logging, metrics, version negotiation, body parsers,
 * error areas) costs per request, as a share of a bare express route measured in the same run.
 */
export interface BenchLine {
  name: string;
  result: LoadResult;
  ratio: number;
  target: number;
}

async function bareExpress(): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.get('/health/live', (_req, res) => {
    res.json({ alive: true, service: 'agent-service', timestamp: new Date().toISOString(), uptime_seconds: 1 });
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export async function benchHttpStack(): Promise<BenchLine[]> {
  const baseline = await bareExpress();
  const app = await startBenchApp();
  try {
    await load(`${baseline.url}/health/live`, { requests: 3_000 }); // warm-up
    await load(`${app.url('main')}/api/version`, { requests: 3_000 });
    const base = await load(`${baseline.url}/health/live`);
    const live = await load(`${app.url('main')}/health/live`);
    const version = await load(`${app.url('main')}/api/version`);
    return [
      { name: 'bare express route (baseline)', result: base, ratio: 1, target: 1 },
      // Probes are not logged at info level: only ids, metrics and version negotiation are paid for.
      { name: 'GET /health/live through the full stack', result: live, ratio: live.rps / base.rps, target: 0.5 },
      { name: 'GET /api/version, logged', result: version, ratio: version.rps / base.rps, target: 0.35 },
    ];
  } finally {
    await app.close();
    await baseline.close();
  }
}
