import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { accessTokenOf, startBenchApp } from './app.js';
import type { BenchLine } from './http-stack.js';
import { load } from './load.js';

/**
 * What an MCP request costs through the whole service (authentication, rate limiting, tool visibility through the
 * authorization evaluator, the SDK server), as a share of a bare express JSON route measured in the same run.
 */
export async function benchMcp(): Promise<BenchLine[]> {
  const bare = express();
  bare.use(express.json());
  bare.post('/echo', (req, res) => {
    res.json({ tools: [], echoed: req.body as unknown });
  });
  const baseline = createServer(bare);
  await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}`;

  const password = 'bench-password-1';
  const app = await startBenchApp({ ADMIN_PASSWORD: password, MCP_REQUESTS_PER_MINUTE: '100000000' });
  try {
    const token = await accessTokenOf(app, 'admin', password);
    const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };

    // A streamable HTTP session, opened once; each request lists tools in it.
    const init = await fetch(`${app.url('main')}/mcp`, {
      method: 'POST',
      headers: { ...auth, Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
      }),
    });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();

    const body = JSON.stringify({ method: 'tools/list' });
    const rpc = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const options = { method: 'POST', requests: 4_000, connections: 16 };
    await load(`${baseUrl}/echo`, { ...options, requests: 1_000, headers: auth, body }); // warm-up
    await load(`${app.url('main')}/mcp/tools/list`, { ...options, requests: 1_000, headers: auth, body });
    const base = await load(`${baseUrl}/echo`, { ...options, headers: auth, body });
    const rest = await load(`${app.url('main')}/mcp/tools/list`, { ...options, headers: auth, body });
    const streamable = await load(`${app.url('main')}/mcp`, {
      ...options,
      headers: { ...auth, Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': session },
      body: rpc,
    });
    return [
      { name: 'bare express JSON route (baseline)', result: base, ratio: 1, target: 1 },
      { name: 'POST /mcp/tools/list (REST-style)', result: rest, ratio: rest.rps / base.rps, target: 0.15 },
      {
        name: 'tools/list in a streamable HTTP session',
        result: streamable,
        ratio: streamable.rps / base.rps,
        target: 0.1,
      },
    ];
  } finally {
    await app.close();
    await new Promise((resolve) => baseline.close(resolve));
  }
}
