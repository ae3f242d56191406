import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Baseline, startBaseline } from './baseline-servers.js';
import { apiKeyScaleRow } from './cases/api-keys.js';
import { chatFirstTokenRows } from './cases/chat.js';
import { SECTION_CONNECTED, connectedToolRows } from './cases/connected.js';
import { loginBurstRow, loginThroughputRow } from './cases/logins.js';
import { heapGrowthRow, idleRssRow, rssRow, sessionHeapRow } from './cases/memory.js';
import { scimRows } from './cases/scim.js';
import { startupRow } from './cases/startup.js';
import { sseStreamsRow } from './cases/streams.js';
import { throughputCases } from './cases/throughput.js';
import { adminToken, bearer, createApiKey } from './client.js';
import { compileBaselines } from './compile.js';
import { type Context, NORMAL, QUICK } from './context.js';
import { prepareWrk, secondsUnderLoad } from './load.js';
import { killChildrenOnExit, pinLoadGenerator, run, stopAll } from './processes.js';
import { printProfiles, summarizeProfiles } from './profile.js';
import { type Row, notRunRow, printTable, rowJson, summarize, writeResults } from './report.js';
import { seedLoginUser } from './seed.js';
import { LOGIN_USER, ROOT, freshDatabase, profileServices, startService } from './service.js';

/**
 * `npm run bench [-- --quick] [-- --no-build] [-- --only=<case>,…] [-- --json] [-- --profile]`: builds the
 * service, starts it and four baselines (raw node:http, express hello, the bare SDK's stateful streamable HTTP
 * server, and its 2026-07-28 `createMcpHandler`) as child processes pinned to core 0, loads them with wrk (a process
 * of its own per run, pinned to core 1; autocannon in this process, also on core 1, only for a fixed rate or a
 * fixed number of requests) in interleaved rounds, and prints one table per case plus bench/results.json. Targets
 * that are missed do not fail the run (the summary line says how many were met); only a broken harness exits
 * non-zero. `--only` runs just the cases named (every one by default); `startup` needs the large database the
 * `scim` case builds, so it runs that case too, unreported. `--json` prints one JSON document on stdout instead of
 * the tables (progress stays on stderr; `npm run -s` keeps npm's own lines off stdout). `--profile` runs every
 * service instance under `node --cpu-prof`, keeps the profiles, and prints the top functions by self time of each
 * (the profiler's sampling costs the service a little throughput).
 */

const CASES = [
  'memory',
  'throughput',
  'logins',
  'streams',
  'connected',
  'api-keys',
  'scim',
  'chat',
  'startup',
] as const;
type CaseName = (typeof CASES)[number];
const FLAGS = ['--quick', '--no-build', '--json', '--profile'];
const USAGE =
  `usage: npm run [-s] bench [-- --quick] [-- --no-build] [-- --json] [-- --profile] ` +
  `[-- --only=${CASES.join(',')}]`;

const args = new Set<string>();
let only: Set<CaseName> | undefined;
for (const arg of process.argv.slice(2)) {
  if (arg.startsWith('--only=')) {
    const names = arg.slice('--only='.length).split(',').filter(Boolean);
    const unknown = names.filter((name) => !(CASES as readonly string[]).includes(name));
    if (names.length === 0 || unknown.length > 0) {
      process.stderr.write(`unknown case ${unknown.join(', ') || '(none)'}; ${USAGE}\n`);
      process.exit(64);
    }
    only = new Set([...(only ?? []), ...(names as CaseName[])]);
  } else if (FLAGS.includes(arg)) args.add(arg);
  else {
    process.stderr.write(`unknown argument ${arg}; ${USAGE}\n`);
    process.exit(64);
  }
}
const want = (name: CaseName): boolean => !only || only.has(name);
const settings = args.has('--quick') ? QUICK : NORMAL;
const json = args.has('--json');
const out = (text: string) => void process.stdout.write(text);
const log = (line: string) => void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
/** What the tables would print before and after them: on stdout for tables, on stderr beside JSON. */
const say = (text: string) => (json ? log(text.trim()) : out(text));

killChildrenOnExit();

async function build(): Promise<void> {
  log('building the service: tsc -p tsconfig.build.json');
  await run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(ROOT, 'tsconfig.build.json')], process.env, true);
  const web = ['playground', 'builder'].every((app) => existsSync(join(ROOT, 'dist/web', app, 'index.html')));
  if (!web) {
    log('dist/web is missing: building the web apps');
    await run('npm', ['run', '--prefix', ROOT, 'build:web'], process.env, true);
  }
}

const rows: Row[] = [];
let broken = false;

/** Runs one case; a case that throws is a harness failure: recorded as failed, and the run exits non-zero. */
async function attempt(section: string, name: string, work: () => Promise<Row | Row[]>): Promise<void> {
  try {
    rows.push(...[await work()].flat());
  } catch (error) {
    broken = true;
    const message = error instanceof Error ? error.message : String(error);
    log(`${section} / ${name} broke: ${message}`);
    rows.push(notRunRow(section, name, `harness error: ${message.split('\n')[0]}`, false));
  }
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const tmp = mkdtempSync(join(tmpdir(), 'agent-service-bench-'));
const profiles = args.has('--profile') ? join(tmp, 'profiles') : undefined;
const began = performance.now();
const cores = availableParallelism(); // before pinning, which leaves this process one
const runInfo = {
  mode: settings.quick ? 'quick' : 'full',
  node: process.version,
  cores,
  pinning: 'not yet',
  loadGenerator: 'wrk',
  rounds: settings.rounds,
  seconds: settings.seconds,
  warmupSeconds: settings.warmupSeconds,
  cases: only ? [...only] : [...CASES],
  tmp,
  /** The 1-minute load average when the run began and when it ended: on a shared machine, how noisy it was. */
  loadAverage: { start: round2(loadavg()[0]!), end: null as number | null },
};

async function main(): Promise<void> {
  if (!args.has('--no-build')) await build();
  compileBaselines();
  const pinning = pinLoadGenerator();
  runInfo.pinning = pinning.enabled
    ? 'servers pinned to core 0, load generators to core 1'
    : `no pinning (${pinning.reason})`;
  runInfo.loadGenerator = `${await prepareWrk(tmp, log)} (autocannon for fixed-rate and fixed-count runs)`;
  if (profiles) profileServices(profiles);
  say(
    `Agent Service benchmark (${settings.quick ? 'quick' : 'full'}): node ${process.version}, ${cores} cores ` +
      `(load average ${runInfo.loadAverage.start}), ${runInfo.pinning}\n` +
      `${settings.rounds} interleaved round(s) of ${settings.seconds} s per target after ` +
      `${settings.warmupSeconds} s of warm-up (median), keep-alive, loopback; load from ${runInfo.loadGenerator}; ` +
      `logs and databases in ${tmp}\n${only ? `cases: ${[...only].join(', ')}\n` : ''}` +
      `${profiles ? `profiling every service instance (node --cpu-prof) into ${profiles}\n` : ''}`,
  );
  const [raw, express, bareMcp, bareMcpModern]: Baseline[] = await Promise.all([
    startBaseline('raw-http', tmp),
    startBaseline('express-hello', tmp),
    startBaseline('bare-mcp', tmp),
    startBaseline('bare-mcp-modern', tmp),
  ]);
  const ctx: Context = {
    settings,
    tmp,
    logDir: tmp,
    raw: raw!,
    express: express!,
    bareMcp: bareMcp!,
    bareMcpModern: bareMcpModern!,
    log,
  };

  if (want('memory') || want('throughput') || want('logins') || want('streams')) {
    const database = await freshDatabase(tmp, 'main');
    await seedLoginUser(database, LOGIN_USER.username, LOGIN_USER.password);
    const service = await startService({ name: 'service', database, logDir: tmp });
    log(`service ready in ${service.startupMs.toFixed(0)} ms at ${service.main}`);
    const token = await adminToken(service.main);
    const apiKey = await createApiKey(service.main, token);
    const mcp = { child: service.child, main: service.main, mcp: `${service.main}/mcp`, headers: bearer(token) };
    const bare = { child: ctx.bareMcp.child, mcp: `${ctx.bareMcp.url}/mcp` };
    const MEMORY = 'Memory (after a full GC in the child; RSS from /proc/<pid>/status)';

    if (want('memory')) {
      await attempt(MEMORY, 'RSS after start', () =>
        rssRow('just after start', service.child, ctx.bareMcp.child, null),
      );
      await attempt(MEMORY, 'RSS idle', () => idleRssRow(service.child, ctx.bareMcp.child, 100));
    }
    let meRps: number | undefined;
    if (want('throughput'))
      await attempt('Throughput', 'throughput cases', async () => {
        const { rows: found, stats } = await throughputCases(ctx, service, { token, apiKey });
        meRps = stats.get('GET /auth/me')?.rps;
        return found;
      });
    if (want('memory')) {
      await attempt(MEMORY, 'RSS after load', () => rssRow('after load', service.child, ctx.bareMcp.child, null));
      await attempt(MEMORY, 'heap growth', () =>
        heapGrowthRow(ctx, mcp, { name: 'conversation_search', arguments: { query: 'benchmark', limit: 1 } }),
      );
      await attempt(MEMORY, 'heap per session', () => sessionHeapRow(ctx, mcp, bare));
    }
    if (want('logins')) {
      await attempt('Logins (POST /auth/login, argon2id)', 'logins/s', () => loginThroughputRow(ctx, service));
      await attempt('Logins (POST /auth/login, argon2id)', 'login burst', () =>
        loginBurstRow(ctx, service, token, meRps ?? 1_000),
      );
    }
    if (want('streams'))
      await attempt('Concurrent SSE streams (GET /sse, Bearer)', 'SSE streams', () =>
        sseStreamsRow(ctx, service, token),
      );
    await service.stop();
  }

  if (want('connected')) await attempt(SECTION_CONNECTED, 'connected tool call', () => connectedToolRows(ctx));
  if (want('api-keys'))
    await attempt('API-key authentication, 10,000 stored keys vs 10', 'API keys', () => apiKeyScaleRow(ctx));
  let largeDatabase: string | undefined;
  if (want('scim') || want('startup'))
    await attempt('SCIM GET /scim/v2/Users', 'SCIM', async () => {
      const result = await scimRows(ctx);
      largeDatabase = result.largeDatabase;
      return want('scim') ? result.rows : [];
    });
  if (want('chat'))
    await attempt('Streamed chat, time to first token (playground POST /api/playground/chat)', 'first token', () =>
      chatFirstTokenRows(ctx),
    );
  if (want('startup'))
    await attempt('Start-up to /health/ready', 'start-up', () =>
      largeDatabase
        ? startupRow(ctx, largeDatabase, settings.scimUsers)
        : Promise.resolve(notRunRow('Start-up to /health/ready', 'start-up', 'no large database (SCIM case failed)')),
    );
  await stopAll();
  writeResults(rows, RESULTS);
  completed = true;
}

const RESULTS = join(ROOT, 'bench/results.json');
let completed = false;
let failure: string | undefined;

/** The tables (or the JSON document), the profiles, and what is kept of the scratch folder. */
function finish(): void {
  // Every service has stopped by now, so every profile is written.
  const summaries = profiles ? summarizeProfiles(profiles) : [];
  const elapsed = (performance.now() - began) / 1000;
  runInfo.loadAverage.end = round2(loadavg()[0]!);
  const timing =
    `measured in ${elapsed.toFixed(0)} s (${secondsUnderLoad().toFixed(0)} s of it under load; load average ` +
    `${runInfo.loadAverage.start} at the start, ${runInfo.loadAverage.end} at the end)` +
    `${completed ? `; results written to ${RESULTS}` : ''}`;
  if (json) {
    const document = {
      run: { ...runInfo, elapsedSeconds: Math.round(elapsed), secondsUnderLoad: Math.round(secondsUnderLoad()) },
      rows: rows.map(rowJson),
      summary: summarize(rows),
      results: completed ? RESULTS : null,
      profiles: profiles ? { dir: profiles, files: summaries } : null,
      broken,
      ...(failure && { error: failure }),
    };
    out(`${JSON.stringify(document, null, 2)}\n`);
    log(timing);
  } else {
    if (rows.length > 0) printTable(rows, out);
    if (profiles) printProfiles(profiles, summaries, out);
    out(`${timing}\n`);
  }
  if (broken) log(`the harness broke${failure ? '' : ' in some case'}: logs kept in ${tmp}`);
  else if (profiles) {
    for (const entry of readdirSync(tmp))
      if (entry !== 'profiles') rmSync(join(tmp, entry), { recursive: true, force: true });
  } else rmSync(tmp, { recursive: true, force: true });
}

try {
  await main();
} catch (error) {
  broken = true;
  failure = error instanceof Error ? error.message.split('\n')[0] : String(error);
  log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  await stopAll();
}
finish();
process.exitCode = broken ? 1 : 0;
