import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { baselineScript } from './compile.js';

/**
 * Child processes of the benchmark: each server (the service and every baseline) runs in its own `node`, pinned to
 * core 0 while the load generators (this process, and each wrk it starts) are pinned to core 1, preloaded with the
 * memory probe, logging to a file, and always stopped when the benchmark ends, fails or is interrupted.
 */

/** Where the servers run, and where the load comes from, when pinning. */
export const SERVER_CORE = 0;
export const LOAD_CORE = 1;

/** The memory probe (bench/baselines/probe.ts, transpiled by compileBaselines). */
const PROBE = pathToFileURL(baselineScript('probe')).href;

export interface Pinning {
  /** Whether children go to core 0 and the load generator to core 1. */
  enabled: boolean;
  /** Why not, when not. */
  reason?: string;
}

function findTaskset(): string | undefined {
  return ['/usr/bin/taskset', '/bin/taskset'].find((path) => existsSync(path));
}

/** Pins this process (every thread of it) to core 1 when `taskset` exists and there are at least two cores. */
export function pinLoadGenerator(): Pinning {
  const taskset = findTaskset();
  if (!taskset) return { enabled: false, reason: 'taskset not found' };
  if (availableParallelism() < 2) return { enabled: false, reason: `only ${availableParallelism()} core` };
  execFileSync(taskset, ['-a', '-cp', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
  pinning = { enabled: true };
  return pinning;
}

let pinning: Pinning = { enabled: false };

/**
 * A load generator's command line, under `taskset -c 1` when pinning. (A child inherits this process's affinity
 * anyway; saying so keeps the pinning true if this process is ever left unpinned.)
 */
export function onLoadCore(command: string, args: string[]): { command: string; args: string[] } {
  const taskset = pinning.enabled ? findTaskset() : undefined;
  return taskset ? { command: taskset, args: ['-c', String(LOAD_CORE), command, ...args] } : { command, args };
}

/** Cores the load generators may use: the load core when pinning, else all of them. */
export const loadCores = (): number => (pinning.enabled ? 1 : availableParallelism());

export interface MemoryUsage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

export interface Child {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or signal) once the child has exited. */
  readonly exited: Promise<number | string>;
  /** Heap and RSS after a full garbage collection in the child (through the probe). */
  memory(): Promise<MemoryUsage>;
  /** Resident set size now, from /proc/<pid>/status (VmRSS), in MB. */
  rssMb(): number;
  /** CPU time used so far, user and system, from /proc/<pid>/stat, in seconds (to the kernel's clock tick). */
  cpuSeconds(): number;
  /** The first IPC message of the given type that the child sends. */
  message<T>(type: string, timeoutMs?: number): Promise<T>;
  /** Sends an IPC message. */
  send(message: unknown): void;
  /** SIGTERM, then SIGKILL if it has not exited in time. */
  stop(): Promise<void>;
  /** The last lines of its log, for error messages. */
  logTail(lines?: number): string;
}

let ticks: number | undefined;
/** The kernel's clock ticks per second (the unit of /proc/<pid>/stat times): `getconf CLK_TCK`, else 100. */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

const running = new Set<Child>();
let nextProbeId = 0;

export interface SpawnOptions {
  /** Arguments after `node` and its flags: a script and its arguments. */
  args: string[];
  /** More flags for `node` itself (`--cpu-prof`, say), before the script. */
  nodeFlags?: string[];
  env: Record<string, string | undefined>;
  logFile: string;
  cwd?: string;
}

/** Starts `node --expose-gc --import probe.mjs <args>` (under `taskset -c 0` when pinning), output to `logFile`. */
export function spawnNode(name: string, { args, nodeFlags = [], env, logFile, cwd }: SpawnOptions): Child {
  const nodeArgs = ['--expose-gc', ...nodeFlags, '--import', PROBE, ...args];
  const taskset = pinning.enabled ? findTaskset() : undefined;
  const log = openSync(logFile, 'a');
  const proc: ChildProcess = taskset
    ? spawn(taskset, ['-c', String(SERVER_CORE), process.execPath, ...nodeArgs], {
        env,
        cwd,
        stdio: ['ignore', log, log, 'ipc'],
      })
    : spawn(process.execPath, nodeArgs, { env, cwd, stdio: ['ignore', log, log, 'ipc'] });
  closeSync(log);
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  const pid = proc.pid;
  const exited = new Promise<number | string>((resolve) => {
    proc.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  proc.on('error', () => undefined);

  const message = <T>(type: string, timeoutMs = 30_000) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`${name}: no "${type}" message within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onMessage = (msg: unknown) => {
        if ((msg as { type?: unknown } | null)?.type === type) done(undefined, msg as T);
      };
      const onExit = () => done(new Error(`${name} exited before sending "${type}"\n${child.logTail()}`));
      function done(error?: Error, value?: T) {
        clearTimeout(timer);
        proc.off('message', onMessage);
        proc.off('exit', onExit);
        if (error) reject(error);
        else resolve(value as T);
      }
      proc.on('message', onMessage);
      proc.once('exit', onExit);
    });

  const child: Child = {
    name,
    pid,
    logFile,
    exited,
    async memory() {
      const id = ++nextProbeId;
      const reply = message<{ id: number; usage: MemoryUsage }>('memory');
      proc.send({ type: 'memory', id });
      return (await reply).usage;
    },
    rssMb() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
      if (kb === undefined) throw new Error(`no VmRSS for ${name} (pid ${pid})`);
      return Number(kb) / 1024;
    },
    cpuSeconds() {
      // The fields after the command name (which may hold spaces), from the state on: utime and stime are 12 and 13.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / clockTicks();
    },
    message,
    send(msg) {
      proc.send(msg as object);
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000).unref());
        if ((await Promise.race([exited, timeout])) === 'timeout') {
          proc.kill('SIGKILL');
          await exited;
        }
      }
      running.delete(child);
    },
    logTail(lines = 20) {
      try {
        return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        return '(no log)';
      }
    },
  };
  running.add(child);
  void exited.then(() => running.delete(child));
  return child;
}

/** Stops every child still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((child) => child.stop()));
}

let handlersInstalled = false;

/** Makes sure no child outlives the benchmark: on exit (killed at once), and on SIGINT/SIGTERM (stopped). */
export function killChildrenOnExit(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', () => {
    for (const child of running) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping ${running.size} child process(es)\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
}

/** A loopback port free right now (bound, then released): for children told their port up front. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Runs a command to completion; its output is shown only when it fails (or always, with `show`). */
export async function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  show = false,
): Promise<void> {
  const proc = spawn(command, args, { stdio: ['ignore', show ? 'inherit' : 'pipe', show ? 'inherit' : 'pipe'], env });
  let output = '';
  proc.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}\n${output}`);
}
