import autocannon from 'autocannon';

/**
 * Closed-loop HTTP load with autocannon (keep-alive connections, loopback), measured by us: latencies come from
 * autocannon's per-response timings (its own histogram rounds to whole milliseconds, too coarse here), and only
 * 2xx answers count. Errors, timeouts and non-2xx answers are reported so that a case can fail on them; they are
 * never counted as throughput.
 */

export interface Target {
  /** Distinct per target: rounds are keyed by it. */
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** A fresh body per request (for JSON-RPC ids that must not repeat within a session). */
  makeBody?: () => string;
  connections: number;
  /** Requests per second over all connections (unbounded when unset). */
  rate?: number;
}

export interface Stats {
  /** 2xx answers per second. */
  rps: number;
  p50: number;
  p99: number;
  /** 2xx answers. */
  ok: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
  seconds: number;
}

export const failures = (stats: Stats): number => stats.errors + stats.non2xx;

let loadedSeconds = 0;
/** Seconds spent under autocannon load so far in this run. */
export const secondsUnderLoad = (): number => loadedSeconds;

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** One run against a target, bounded by `seconds` or by a number of requests (`amount`). */
export function runLoad(target: Target, bound: { seconds: number } | { amount: number }): Promise<Stats> {
  const latencies: number[] = [];
  let non2xx = 0;
  const began = performance.now();
  return new Promise<Stats>((resolve, reject) => {
    const { makeBody } = target;
    const instance = autocannon(
      {
        url: target.url,
        connections: target.connections,
        pipelining: 1,
        timeout: 10,
        // autocannon checks for the end of a run once per sample interval (1 s by default): end runs on time.
        sampleInt: 50,
        ...('amount' in bound ? { amount: bound.amount } : { duration: bound.seconds }),
        ...(target.rate !== undefined && { overallRate: target.rate }),
        requests: [
          {
            method: target.method ?? 'GET',
            ...(target.headers && { headers: target.headers }),
            ...(target.body !== undefined && { body: target.body }),
            ...(makeBody && { setupRequest: (request) => ({ ...request, body: makeBody() }) }),
          },
        ],
      },
      (error, result) => {
        if (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        const sorted = Float64Array.from(latencies).sort();
        const seconds = (performance.now() - began) / 1000;
        loadedSeconds += seconds;
        resolve({
          rps: latencies.length / seconds,
          p50: percentile(sorted, 0.5),
          p99: percentile(sorted, 0.99),
          ok: latencies.length,
          errors: result.errors,
          non2xx,
          seconds,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
      else non2xx += 1;
    });
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The median of each figure over several runs; errors and non-2xx answers are summed. */
export function medianStats(runs: Stats[]): Stats {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    ok: runs.reduce((n, r) => n + r.ok, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    seconds: runs.reduce((n, r) => n + r.seconds, 0),
  };
}

export interface RoundsOptions {
  rounds: number;
  seconds: number;
  /** A short unmeasured run of each target first (JIT, caches, connection set-up). */
  warmupSeconds: number;
}

/**
 * Measures every target `rounds` times, interleaved (baseline, subject, baseline, subject, … in the order given),
 * and answers each target's median. Interleaving spreads the noise of a shared machine over all of them.
 */
export async function interleavedRounds(targets: Target[], options: RoundsOptions): Promise<Map<string, Stats>> {
  const names = new Set(targets.map((t) => t.name));
  if (names.size !== targets.length) throw new Error('target names must be distinct');
  if (options.warmupSeconds > 0)
    for (const target of targets) await runLoad(target, { seconds: options.warmupSeconds });
  const runs = new Map<string, Stats[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < options.rounds; round++) {
    for (const target of targets) runs.get(target.name)!.push(await runLoad(target, { seconds: options.seconds }));
  }
  return new Map([...runs].map(([name, stats]) => [name, medianStats(stats)]));
}
