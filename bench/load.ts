import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import autocannon from 'autocannon';
import { loadCores, onLoadCore, run } from './processes.js';

/**
 * Closed-loop HTTP load (keep-alive connections, loopback). By default wrk generates it, in a process of its own
 * pinned to the load core (C and epoll: far cheaper per request than autocannon's JavaScript thread, so that the
 * load generator is not what limits the fastest baselines, and this process's event loop plays no part): a Lua
 * script written per target sets the method, headers and body, builds a fresh body per request where JSON-RPC ids
 * must not repeat, counts answers that are not 2xx, and prints its figures as JSON from wrk's `done` hook.
 * autocannon (in this process) remains for what wrk cannot express: a fixed request rate (`rate`) and a fixed
 * number of requests (`amount`).
 *
 * Only 2xx answers count as throughput. wrk itself counts only statuses above 399, so the script's `response` hook
 * counts every status outside 200–299 (3xx too); defining that hook makes wrk hand each answer's headers and body
 * to Lua, which costs the load core a few microseconds per answer (measured: about 3–5 µs of wrk's user time) and
 * the server nothing. Latencies are those of the answers themselves: from wrk's histogram (microsecond resolution,
 * every answer) with its correction for coordinated omission taken back out (ANSWERED_LUA; its corrected p99 is
 * reported beside), or, with autocannon, per-response timings of 2xx answers (its own histogram rounds to whole
 * milliseconds, too coarse here). Errors, timeouts and non-2xx answers are reported so that a case can fail on them.
 */

/** Stands for the request's id in a `bodyTemplate` (a bare JSON number once replaced). */
export const BODY_ID = '{{id}}';

export interface Target {
  /** Distinct per target: rounds are keyed by it. */
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /**
   * A body with `BODY_ID` in it, replaced in each request by an id never used before in this run (JSON-RPC ids
   * must not repeat within a session). Instead of `body`.
   */
  bodyTemplate?: string;
  connections: number;
  /** Requests per second over all connections (unbounded when unset); only autocannon keeps a rate. */
  rate?: number;
}

/** What one round of a load measured: 2xx answers per second, and its latency percentiles in milliseconds. */
export interface RoundFigures {
  rps: number;
  p50: number;
  p99: number;
}

export interface Stats {
  /** 2xx answers per second. */
  rps: number;
  /** Milliseconds: of the answers themselves, as clients saw them. */
  p50: number;
  p99: number;
  /** wrk's p99 with its correction for coordinated omission (milliseconds; wrk's loads only: see ANSWERED_LUA). */
  p99Corrected?: number;
  /** Where these are the medians of interleaved rounds: each round's own, in the order they ran. */
  rounds?: RoundFigures[];
  /** 2xx answers. */
  ok: number;
  /** Connection errors (connect, read, write) and timeouts. */
  errors: number;
  non2xx: number;
  seconds: number;
}

export const failures = (stats: Stats): number => stats.errors + stats.non2xx;

let loadedSeconds = 0;
/** Seconds spent under load (wrk's or autocannon's) so far in this run. */
export const secondsUnderLoad = (): number => loadedSeconds;

/** One run against a target, bounded by `seconds` or by a number of requests (`amount`). */
export function runLoad(target: Target, bound: { seconds: number } | { amount: number }): Promise<Stats> {
  if ('amount' in bound || target.rate !== undefined) return runAutocannon(target, bound);
  return runWrk(target, bound.seconds);
}

// ---------------------------------------------------------------------------------------------------------- wrk

let wrkPath: string | undefined;
let scriptDir: string | undefined;
const scripts = new Map<string, string>();
// Ids of templated bodies: each run starts past every id an earlier run could have used (a run makes far fewer
// than ID_STRIDE requests), and stays far below 2^53 and LuaJIT's exact integer formatting.
const ID_STRIDE = 10_000_000;
let nextIdBase = ID_STRIDE;

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `wrk 4.1.0` (from `wrk -v`, which prints its version and usage and exits 1). */
function wrkVersion(path: string): string {
  const { stdout } = spawnSync(path, ['-v'], { encoding: 'utf8' });
  const version = /^wrk\s+(?:debian\/)?(\d[\d.]*)/m.exec(stdout ?? '')?.[1];
  return version ? `wrk ${version}` : 'wrk';
}

/**
 * Finds wrk, installing it with apt-get (as root, or through `sudo -n`) when it is missing, and sets where its
 * scripts are written. Answers its version, for the report.
 */
export async function prepareWrk(dir: string, log: (line: string) => void): Promise<string> {
  scriptDir = join(dir, 'wrk');
  mkdirSync(scriptDir, { recursive: true });
  wrkPath = onPath('wrk');
  if (!wrkPath) {
    const root = process.getuid?.() === 0;
    log(`wrk is not installed: installing it (apt-get install -y wrk${root ? '' : ', through sudo'})`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const apt = (args: string[]) =>
      root
        ? run('apt-get', args, env)
        : run('sudo', ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', ...args]);
    try {
      await apt(['install', '-y', 'wrk']).catch(async () => {
        await apt(['update', '-qq']);
        await apt(['install', '-y', 'wrk']);
      });
    } catch (error) {
      const why = error instanceof Error ? error.message.split('\n').slice(0, 4).join('\n') : String(error);
      throw new Error(`wrk is needed to generate load and could not be installed: ${why}`, { cause: error });
    }
    wrkPath = onPath('wrk');
    if (!wrkPath) throw new Error('wrk is needed to generate load: apt-get installed it, but it is not on PATH');
    log(`installed ${wrkVersion(wrkPath)} at ${wrkPath}`);
  }
  return wrkVersion(wrkPath);
}

/** A Lua string literal: bytes as they are, but quotes, backslashes and control characters escaped. */
function lua(text: string): string {
  // eslint-disable-next-line no-control-regex
  return `"${text.replace(/[\\"\u0000-\u001f\u007f]/g, (c) => `\\${c.charCodeAt(0).toString().padStart(3, '0')}`)}"`;
}

const MARKER = 'BENCH_WRK_JSON ';

/**
 * The latencies of the answers themselves, from wrk's histogram as `done` receives it. Before `done`, wrk corrects
 * its histogram for coordinated omission (its `stats_correct`): for every answer slower than twice an interval it
 * takes to be each connection's pace (the run's duration over its requests per connection), it adds one made-up
 * sample for each interval the answer was late by, as if a client at a constant rate had sent those requests in the
 * meantime and they had waited too. A closed loop at full load is not such a client: there one pause of the server
 * is seen by each connection's single request in flight, and the correction turns it into several times as many
 * samples, which then make the p99 (a server that answered 99 % of its requests within 26 ms, seen on the wire, read
 * as a p99 of 300 ms). The correction adds, to each value above the interval, the count of every value an interval or more above
 * it; so an answer's own count is the corrected count less the corrected count one interval above. `answered` counts
 * the answers so recovered, which the caller checks against the requests wrk completed.
 */
const ANSWERED_LUA = [
  'local function answers(summary, latency, connections)',
  '  local perConnection = math.floor(summary.requests / connections)',
  '  local interval = perConnection > 0 and math.floor(summary.duration / perConnection) or math.huge',
  '  local values, corrected = {}, {}',
  '  for i = 1, #latency do',
  '    local value, count = latency(i)',
  '    values[i] = value',
  '    corrected[value] = count',
  '  end',
  '  local own, total = {}, 0',
  '  for i, value in ipairs(values) do',
  '    local count = corrected[value]',
  '    if value > interval then count = count - (corrected[value + interval] or 0) end',
  '    own[i] = count',
  '    total = total + count',
  '  end',
  // The rank rule of wrk's own stats_percentile.
  '  local function percentile(p)',
  '    local rank, seen = math.floor(p / 100 * total + 1), 0',
  '    for i, value in ipairs(values) do',
  '      seen = seen + own[i]',
  '      if seen >= rank then return value end',
  '    end',
  '    return 0',
  '  end',
  '  return total, percentile(50), percentile(99)',
  'end',
];

/** The Lua script of a target: its request, a fresh id per request for templates, non-2xx counting, JSON out. */
function wrkScript(target: Target): string {
  const lines = [`-- ${target.name.replace(/\n/g, ' ')}: written by bench/load.ts`];
  lines.push(`wrk.method = ${lua(target.method ?? 'GET')}`);
  for (const [name, value] of Object.entries(target.headers ?? {}))
    lines.push(`wrk.headers[${lua(name)}] = ${lua(value)}`);
  if (target.body !== undefined) lines.push(`wrk.body = ${lua(target.body)}`);
  lines.push(
    'local threads = {}',
    'function setup(thread)',
    '  thread:set("index", #threads)',
    '  table.insert(threads, thread)',
    'end',
    'function init(args)',
    '  first, step = tonumber(args[1]), tonumber(args[2])',
    '  id = first + index',
    '  non2xx = 0',
    'end',
  );
  if (target.bodyTemplate !== undefined) {
    const at = target.bodyTemplate.indexOf(BODY_ID);
    if (at < 0 || target.bodyTemplate.includes(BODY_ID, at + 1))
      throw new Error(`${target.name}: a body template holds ${BODY_ID} exactly once`);
    const [prefix, suffix] = [target.bodyTemplate.slice(0, at), target.bodyTemplate.slice(at + BODY_ID.length)];
    lines.push(
      `local prefix, suffix = ${lua(prefix)}, ${lua(suffix)}`,
      'function request()',
      '  local body = prefix .. string.format("%d", id) .. suffix',
      '  id = id + step',
      '  return wrk.format(nil, nil, nil, body)',
      'end',
    );
  }
  lines.push(
    // wrk counts only statuses above 399 as errors; this counts 1xx and 3xx as well (see the cost above).
    'function response(status)',
    '  if status < 200 or status > 299 then non2xx = non2xx + 1 end',
    'end',
    ...ANSWERED_LUA,
    'function done(summary, latency)',
    '  local bad = 0',
    '  for _, thread in ipairs(threads) do bad = bad + thread:get("non2xx") end',
    '  local e = summary.errors',
    `  local answered, p50, p99 = answers(summary, latency, ${target.connections})`,
    `  io.write(string.format('\\n${MARKER}{"requests":%d,"duration":%d,"answered":%d,"p50":%d,"p99":%d,' ..`,
    `    '"p99Corrected":%d,"non2xx":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\\n',`,
    '    summary.requests, summary.duration, answered, p50, p99, latency:percentile(99), bad, e.status, e.connect,',
    '    e.read, e.write, e.timeout))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

/** The script file of a target, written once per distinct script. */
function scriptFile(target: Target): string {
  const text = wrkScript(target);
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
  let file = scripts.get(hash);
  if (!file) {
    if (!scriptDir) scriptDir = mkdtempSync(join(tmpdir(), 'agent-service-bench-wrk-'));
    const slug = target.name
      .replace(/[^a-z0-9]+/gi, '-')
      .replace(/^-|-$/g, '')
      .toLowerCase();
    file = join(scriptDir, `${slug || 'target'}-${hash}.lua`);
    writeFileSync(file, text);
    scripts.set(hash, file);
  }
  return file;
}

interface WrkSummary {
  requests: number;
  /** Microseconds, as every figure here. */
  duration: number;
  /** Answers whose latency wrk recorded (every completed request but those past its timeout). */
  answered: number;
  p50: number;
  p99: number;
  /** wrk's own p99, with its correction for coordinated omission (see ANSWERED_LUA). */
  p99Corrected: number;
  non2xx: number;
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
}

const runningWrk = new Set<ChildProcess>();
process.on('exit', () => {
  for (const proc of runningWrk) proc.kill('SIGKILL');
});

/**
 * `wrk -t<threads> -c<connections> -d<seconds>s --timeout 10s -s <script> <url> -- <first id> <threads>`: one
 * thread up to 50 connections (one more per 50 beyond, while there are cores for them; the load core is one).
 * wrk takes whole seconds only.
 */
async function runWrk(target: Target, seconds: number): Promise<Stats> {
  if (!wrkPath) throw new Error('wrk is not prepared (prepareWrk)');
  const threads = Math.max(1, Math.min(Math.ceil(target.connections / 50), loadCores(), target.connections));
  const whole = Math.max(1, Math.round(seconds));
  const first = nextIdBase;
  nextIdBase += ID_STRIDE;
  const { command, args } = onLoadCore(wrkPath, [
    `-t${threads}`,
    `-c${target.connections}`,
    `-d${whole}s`,
    '--timeout',
    '10s',
    '-s',
    scriptFile(target),
    target.url,
    '--',
    String(first),
    String(threads),
  ]);
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  runningWrk.add(proc);
  let output = '';
  proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', resolve);
  }).finally(() => runningWrk.delete(proc));
  const line = output.split('\n').find((l) => l.startsWith(MARKER));
  if (code !== 0 || !line) throw new Error(`wrk against ${target.name} exited with ${code}\n${output.trim()}`);
  const summary = JSON.parse(line.slice(MARKER.length)) as WrkSummary;
  if (summary.answered > summary.requests || summary.answered + summary.timeout < summary.requests)
    throw new Error(
      `wrk against ${target.name}: ${summary.answered} latencies recovered for ${summary.requests} requests ` +
        `(${summary.timeout} timeouts): wrk's histogram is not what ANSWERED_LUA takes it to be`,
    );
  const measured = summary.duration / 1e6;
  loadedSeconds += measured;
  const ok = summary.requests - summary.non2xx;
  return {
    rps: ok / measured,
    p50: ok > 0 ? summary.p50 / 1000 : Number.NaN,
    p99: ok > 0 ? summary.p99 / 1000 : Number.NaN,
    p99Corrected: ok > 0 ? summary.p99Corrected / 1000 : Number.NaN,
    ok,
    errors: summary.connect + summary.read + summary.write + summary.timeout,
    non2xx: summary.non2xx,
    seconds: measured,
  };
}

// --------------------------------------------------------------------------------------------------- autocannon

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** autocannon in this process: for a fixed rate, or a fixed number of requests. */
function runAutocannon(target: Target, bound: { seconds: number } | { amount: number }): Promise<Stats> {
  const latencies: number[] = [];
  let non2xx = 0;
  const began = performance.now();
  return new Promise<Stats>((resolve, reject) => {
    const { bodyTemplate } = target;
    let id = nextIdBase;
    nextIdBase += ID_STRIDE;
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
            ...(bodyTemplate !== undefined && {
              setupRequest: (request) => ({ ...request, body: bodyTemplate.replace(BODY_ID, String(id++)) }),
            }),
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

// ------------------------------------------------------------------------------------------------------- rounds

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The median of each figure over several runs, with each run's own; errors and non-2xx answers are summed. */
export function medianStats(runs: Stats[]): Stats {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    ...(runs.every((r) => r.p99Corrected !== undefined) && {
      p99Corrected: median(runs.map((r) => r.p99Corrected!)),
    }),
    rounds: runs.map(({ rps, p50, p99 }) => ({ rps, p50, p99 })),
    ok: runs.reduce((n, r) => n + r.ok, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    seconds: runs.reduce((n, r) => n + r.seconds, 0),
  };
}

export interface RoundsOptions {
  rounds: number;
  /** Seconds per measured run: whole seconds (wrk's unit). */
  seconds: number;
  /** A short unmeasured run of each target first (JIT, caches, connection set-up); 0 for none. */
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
