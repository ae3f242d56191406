import { join } from 'node:path';
import { baselineScript } from './compile.js';
import { type Child, spawnNode } from './processes.js';

/** A running baseline: its child process and its base URL (or none, for the argon2 worker). */
export interface Baseline {
  child: Child;
  url: string;
}

const ENV = () => ({ PATH: process.env.PATH, HOME: process.env.HOME });

/**
 * Starts one of bench/baselines/*.ts (transpiled) in its own child and waits for the port it announces; `env` adds
 * to the little it inherits (the upstream's bearer token, say).
 */
export async function startBaseline(
  name: 'raw-http' | 'express-hello' | 'bare-mcp' | 'bare-mcp-modern' | 'upstream-mcp' | 'model-relay',
  logDir: string,
  env: Record<string, string> = {},
) {
  const child = spawnNode(name, {
    args: [baselineScript(name)],
    env: { ...ENV(), ...env },
    logFile: join(logDir, `${name}.log`),
  });
  const { port } = await child.message<{ port: number }>('listening');
  return { child, url: `http://127.0.0.1:${port}` } satisfies Baseline;
}

/** Starts the argon2 worker, with the thread-pool size the service sets for itself (src/main.ts). */
export async function startArgon2(logDir: string): Promise<Child> {
  const child = spawnNode('argon2', {
    args: [baselineScript('argon2')],
    env: { ...ENV(), UV_THREADPOOL_SIZE: '8' },
    logFile: join(logDir, 'argon2.log'),
  });
  await child.message('ready');
  return child;
}
