import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { nodeArgsFor } from './entry.js';

/**
 * Real upstream MCP servers for the connections tests, each in a process of its own: the reference servers
 * (server-everything over stdio, streamable HTTP and SSE; server-memory over stdio) and our own misbehaving
 * test upstream (test/fixtures/upstream-server.ts). Every process started here is killed by its `close`, when the
 * test process exits, and — as each one watches its standard input — when the test process dies without a word.
 */

/** How to launch a stdio server: what a StdioClientTransport (or the service's own stdio connection) takes. */
export interface StdioCommand {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** A server over HTTP: its MCP endpoint, and a `close` that stops its process. */
export interface HttpUpstream {
  url: string;
  close: () => Promise<void>;
}

export interface TestUpstream {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  port: number;
  /** `POST /control/<action>` with `body` as JSON: rug-pull, reset, calls, require-bearer, sessions, drop-sessions. */
  control: (action: string, body?: unknown) => Promise<unknown>;
  /** SIGKILL, resolving once the process has exited: a crash, open connections cut. */
  kill: () => Promise<void>;
  /** Kills it if it still runs, then starts a fresh one (empty state) on the same port. */
  restart: () => Promise<void>;
  close: () => Promise<void>;
  /** What the process wrote on stdout and stderr (the last 64 KiB), to explain a failure. */
  output: () => string;
}

const require = createRequire(import.meta.url);
const ROOT = join(import.meta.dirname, '../..');
const FIXTURE = join(ROOT, 'test/fixtures/upstream-server.ts');
const STARTUP_TIMEOUT_MS = 15_000;
const OUTPUT_LIMIT = 64 * 1024;

/** The entry point a package names as its `bin`, found through module resolution rather than a relative path. */
function binOf(pkg: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const entry = typeof bin === 'string' ? bin : Object.values(bin)[0];
  if (!entry) throw new Error(`${pkg} names no bin`);
  return join(dirname(manifestPath), entry);
}

const EVERYTHING = binOf('@modelcontextprotocol/server-everything');
const MEMORY = binOf('@modelcontextprotocol/server-memory');

/**
 * Preloaded into servers we do not write: exit when standard input ends, i.e. when the test process (holding the
 * other end of the pipe) is gone, however it went.
 */
const EXIT_WITH_PARENT = 'data:text/javascript,process.stdin.on("end",()=>process.exit(0)).resume()';

/** The environment of every spawned server: only what Node needs, so nothing of the test run leaks in. */
const baseEnv = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  ...(process.env.HOME && { HOME: process.env.HOME }),
});

/** server-everything over stdio, launched by whoever runs the command (its stderr says "Starting default..."). */
export function everythingStdioCommand(): StdioCommand {
  return { command: process.execPath, args: [EVERYTHING, 'stdio'] };
}

/** server-memory over stdio, its knowledge graph in `dir`/memory.jsonl. */
export function memoryStdioCommand(dir: string): StdioCommand {
  return { command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } };
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

interface Spawned {
  child: ChildProcess;
  exited: Promise<void>;
  output: () => string;
}

function spawnServer(args: string[], env: Record<string, string>): Spawned {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const child of running) child.kill('SIGKILL');
    });
  }
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...baseEnv(), ...env }, stdio: 'pipe' });
  running.add(child);
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > OUTPUT_LIMIT * 2) output = output.slice(-OUTPUT_LIMIT);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  child.stdin.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running.delete(child);
      resolve();
    });
  });
  return { child, exited, output: () => output.slice(-OUTPUT_LIMIT) };
}

/** Stops a process (SIGTERM, or the signal given) and resolves once it has exited; SIGKILL if it lingers. */
async function stop(spawned: Spawned, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) return;
  spawned.child.kill(signal);
  const timer = setTimeout(() => spawned.child.kill('SIGKILL'), 3_000);
  await spawned.exited;
  clearTimeout(timer);
}

/** A port nobody listens on right now (another process may take it before ours does: callers retry). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hasExited = (spawned: Spawned) => spawned.child.exitCode !== null || spawned.child.signalCode !== null;

class PortTaken extends Error {}

/**
 * Polls `ready` until it says yes, the process exits (PortTaken when it says so) or the startup time runs out.
 * On failure the process is stopped.
 */
async function waitUntilReady(spawned: Spawned, what: string, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (hasExited(spawned)) {
      if (/EADDRINUSE|already in use/.test(spawned.output())) throw new PortTaken(spawned.output());
      throw new Error(`${what} exited before it took traffic:\n${spawned.output()}`);
    }
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) {
      await stop(spawned, 'SIGKILL');
      throw new Error(`${what} did not take traffic within ${STARTUP_TIMEOUT_MS} ms:\n${spawned.output()}`);
    }
    await sleep(50);
  }
}

/** Starts a server on a free port, trying another when someone took the port in the meantime. */
async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort());
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt >= 5) throw error;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// server-everything over HTTP

const initializeBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'readiness-probe', version: '1' } },
});

/** Whether a streamable HTTP endpoint answers an initialize; the session it opened is deleted again. */
async function acceptsStreamableHttp(url: string): Promise<boolean> {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  const response = await fetch(url, { method: 'POST', headers, body: initializeBody });
  const body = await response.text();
  const session = response.headers.get('mcp-session-id');
  if (session) await fetch(url, { method: 'DELETE', headers: { 'Mcp-Session-Id': session } }).then((r) => r.text());
  return response.ok && body.includes('"protocolVersion"');
}

/** Whether an SSE endpoint opens a stream and names its message endpoint; the stream is closed again. */
async function acceptsSse(url: string): Promise<boolean> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 2_000);
  try {
    const response = await fetch(url, { headers: { Accept: 'text/event-stream' }, signal: abort.signal });
    if (!response.ok || !response.body) return false;
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (text.includes('event: endpoint')) return true;
    }
    return false;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

async function startEverything(mode: 'streamableHttp' | 'sse', path: string): Promise<HttpUpstream> {
  return onFreePort(async (port) => {
    const spawned = spawnServer(['--import', EXIT_WITH_PARENT, EVERYTHING, mode], { PORT: String(port) });
    const url = `http://127.0.0.1:${port}${path}`;
    await waitUntilReady(spawned, `server-everything (${mode})`, () =>
      mode === 'sse' ? acceptsSse(url) : acceptsStreamableHttp(url),
    );
    return { url, close: () => stop(spawned) };
  });
}

/** server-everything over streamable HTTP on a free port; `url` is its MCP endpoint (…/mcp). */
export function startEverythingHttp(): Promise<HttpUpstream> {
  return startEverything('streamableHttp', '/mcp');
}

/** server-everything over the 2024-11-05 HTTP+SSE transport on a free port; `url` is its SSE endpoint (…/sse). */
export function startEverythingSse(): Promise<HttpUpstream> {
  return startEverything('sse', '/sse');
}

// ---------------------------------------------------------------------------------------------------------------
// The test upstream

/** Waits for the fixture's `{"listening":<port>}` line; PortTaken when the port was in use. */
async function listeningPort(spawned: Spawned): Promise<number> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    const match = /\{"listening":(\d+)\}/.exec(spawned.output());
    if (match) return Number(match[1]);
    if (hasExited(spawned)) {
      if (/EADDRINUSE/.test(spawned.output())) throw new PortTaken(spawned.output());
      throw new Error(`the test upstream exited before it listened:\n${spawned.output()}`);
    }
    if (Date.now() > deadline) {
      await stop(spawned, 'SIGKILL');
      throw new Error(`the test upstream did not listen within ${STARTUP_TIMEOUT_MS} ms:\n${spawned.output()}`);
    }
    await sleep(25);
  }
}

/**
 * Starts test/fixtures/upstream-server.ts on 127.0.0.1: on `port`, or an ephemeral one. With
 * `requireBearer`, /mcp demands that token from the start (and again after a restart).
 */
export async function startTestUpstream(
  options: { port?: number; requireBearer?: string } = {},
): Promise<TestUpstream> {
  const launch = async (port: number) => {
    const spawned = spawnServer(nodeArgsFor(FIXTURE), {
      UPSTREAM_PORT: String(port),
      ...(options.requireBearer && { UPSTREAM_REQUIRE_BEARER: options.requireBearer }),
    });
    return { spawned, port: await listeningPort(spawned) };
  };
  let current = await launch(options.port ?? 0);
  const port = current.port;
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}/mcp`,
    port,
    async control(action, body) {
      const response = await fetch(`${base}/control/${action}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body ?? {}),
      });
      const reply: unknown = await response.json();
      if (!response.ok) throw new Error(`control ${action}: ${response.status} ${JSON.stringify(reply)}`);
      return reply;
    },
    kill: () => stop(current.spawned, 'SIGKILL'),
    async restart() {
      await stop(current.spawned, 'SIGKILL');
      // The port is free once the process is gone; a moment's grace should the system be slow to let it go.
      for (let attempt = 1; ; attempt++) {
        try {
          current = await launch(port);
          return;
        } catch (error) {
          if (!(error instanceof PortTaken) || attempt >= 20) throw error;
          await sleep(100);
        }
      }
    },
    close: () => stop(current.spawned),
    output: () => current.spawned.output(),
  };
}
