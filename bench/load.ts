import { Agent, request } from 'node:http';

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
}

/**
 * A small closed-loop load generator for loopback servers: `connections` keep-alive clients send GETs back to
 * back until `requests` have completed or `maxSeconds` have passed. Bounded in count and time by design.
 */
export interface LoadOptions {
  connections?: number;
  requests?: number;
  maxSeconds?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export async function load(url: string, options: LoadOptions = {}): Promise<LoadResult> {
  const { connections = 32, requests = 20_000, maxSeconds = 15, method = 'GET', headers = {}, body } = options;
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(url);
  const latencies: number[] = [];
  let sent = 0;
  let errors = 0;
  const began = performance.now();
  const deadline = began + maxSeconds * 1000;

  const once = () =>
    new Promise<void>((resolve) => {
      const start = performance.now();
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          agent,
          method,
          headers,
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if ((res.statusCode ?? 500) >= 400) errors += 1;
            latencies.push(performance.now() - start);
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors += 1;
        resolve();
      });
      req.end(body);
    });

  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (sent < requests && performance.now() < deadline) {
        sent += 1;
        await once();
      }
    }),
  );
  agent.destroy();
  const seconds = (performance.now() - began) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    requests: latencies.length,
    seconds,
    rps: latencies.length / seconds,
    p50ms: at(0.5),
    p99ms: at(0.99),
    errors,
  };
}
