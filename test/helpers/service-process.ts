import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { nodeArgsFor } from './entry.js';

/** The real command-line entry point, run as a separate process (from the sources: no build is needed). */
const MAIN = join(import.meta.dirname, '../../src/main.ts');

/** A run of the command line: its process, its output (JSON log lines parsed), and its exit. */
export interface Run {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first log line that satisfies the predicate. */
  waitFor: (predicate: (line: Record<string, unknown>) => boolean) => Promise<Record<string, unknown>>;
}

const running: ChildProcess[] = [];

/** Kills (SIGKILL) every process `run` started that has not exited: for an afterEach, so none outlives its test. */
export function killRunning(): void {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
}

/** Runs `agent-service <args>` with only the given environment (and PATH, HOME), optionally writing `input`. */
export function run(args: string[], env: Record<string, string> = {}, input?: string): Run {
  const child = spawn(process.execPath, [...nodeArgsFor(MAIN), ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin!.end(input);
  running.push(child);
  const lines: Record<string, unknown>[] = [];
  let stdout = '';
  let allStdout = '';
  let stderr = '';
  const waiters: {
    predicate: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    allStdout += chunk.toString();
    let newline: number;
    while ((newline = stdout.indexOf('\n')) >= 0) {
      const text = stdout.slice(0, newline);
      stdout = stdout.slice(newline + 1);
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        line = { text };
      }
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.predicate(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    stdout: () => allStdout,
    stderr: () => stderr,
    exited,
    waitFor: (predicate) => {
      const found = lines.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        waiters.push({ predicate, resolve });
        void exited.then((code) => reject(new Error(`exited with ${code} before the line appeared:\n${stderr}`)));
      });
    },
  };
}

/** `serve` on a SQLite file, every listener on an ephemeral port, logging at info. */
export const servingEnv = (dbFile: string) => ({
  DATABASE_URL: `sqlite:${dbFile}`,
  PORT: '0',
  PLAYGROUND_PORT: '0',
  BUILDER_PORT: '0',
  LOG_LEVEL: 'info',
});

/** Starts `serve` and waits until it takes traffic: the main listener's URL, the instance id, the migration line. */
export async function startServing(
  dbFile: string,
  env: Record<string, string> = {},
): Promise<{ run: Run; url: string; instance: string; migrated: string }> {
  const serving = run(['serve'], { ...servingEnv(dbFile), ...env });
  const listening = await serving.waitFor((l) => l.msg === 'listening' && l.listener === 'main');
  const migration = await serving.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('database'));
  const started = await serving.waitFor((l) => l.msg === 'service started');
  return {
    run: serving,
    url: String(listening.url),
    instance: String(started.instance),
    migrated: String(migration.msg),
  };
}
