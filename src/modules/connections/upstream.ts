import type { AuthProvider, CallToolResult, Client, Tool, Transport } from '@modelcontextprotocol/client';
import type { StdioCommand } from '../../config.js';
import type { Logger } from '../../logger.js';
import { SERVICE_VERSION } from '../../version.js';
import { type OutboundFetch, OutboundLimitError } from './outbound.js';

/** The MCP client SDK, loaded when the first upstream is connected (a service without connections never needs it). */
const mcpClient = () => import('@modelcontextprotocol/client');

/** One way of reaching an upstream: a connection, as one account (or its shared credential) uses it. */
export interface UpstreamTarget {
  /** Identifies the client: the connection, the account, and the connection's version (a change reconnects). */
  key: string;
  connectionId: string;
  /** Whose connection it is ('' shared): what reading it back names. */
  ownerKey: string;
  transport:
    | { kind: 'streamable_http' | 'sse'; url: string; headers: Record<string, string>; auth?: AuthProvider }
    | { kind: 'stdio'; command: StdioCommand };
}

/** What a connected upstream said about itself when the client connected. */
export interface UpstreamInfo {
  protocolVersion: string | undefined;
  server: { name: string; version: string } | undefined;
}

/** A breaker around one connection: calls fail at once while its upstream is out of reach. */
export interface UpstreamBreaker {
  run<T>(call: () => Promise<T>): Promise<T>;
  readonly isOpen: boolean;
  readonly since: number | undefined;
}

export interface UpstreamPoolDeps {
  fetch: OutboundFetch;
  /** How long connecting, listing and each call may take. */
  timeoutMs: number;
  /** The largest message a stdio server may send. */
  maxResponseBytes: number;
  breakerFor: (connectionId: string) => UpstreamBreaker;
  logger: Logger;
  /** Told when an upstream says its tools changed (`list_changed`), with the new list. */
  onToolsChanged: (target: UpstreamTarget, tools: Tool[]) => void;
}

interface Entry {
  client: Promise<Client>;
  /** The calls in flight, told when the transport cuts a response off (the SDK would wait for it until timeout). */
  inFlight: Set<(error: Error) => void>;
  tools?: { at: number; list: Tool[] };
  lastUsed: number;
  info?: UpstreamInfo;
}

const IDLE_MS = 5 * 60_000;
const TOOLS_TTL_MS = 5 * 60_000;
const MAX_CLIENTS = 1_000;

/**
 * The MCP clients of connected upstreams, one per connection and account, opened on first use (the 2.x client in
 * `auto`: a 2026-07-28 server is spoken to in its revision, a 2025 one in its own), closed when idle, dropped when
 * their transport fails so the next use reconnects. Every HTTP request goes through the outbound guard; every
 * request has a timeout and runs behind the connection's breaker.
 */
export class UpstreamPool {
  readonly #entries = new Map<string, Entry>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(private readonly deps: UpstreamPoolDeps) {
    this.#sweeper = setInterval(() => this.#sweep(), 60_000);
    this.#sweeper.unref();
  }

  /** Connects (or reuses the client) and says what the upstream is. */
  async info(target: UpstreamTarget): Promise<UpstreamInfo> {
    await this.#client(target);
    return this.#entries.get(target.key)?.info ?? { protocolVersion: undefined, server: undefined };
  }

  /** The upstream's tools, from the cache while it is fresh and the upstream has not announced a change. */
  async listTools(target: UpstreamTarget, options: { fresh?: boolean } = {}): Promise<Tool[]> {
    const client = await this.#client(target);
    const entry = this.#entries.get(target.key);
    if (entry?.tools && !options.fresh && Date.now() - entry.tools.at < TOOLS_TTL_MS) return entry.tools.list;
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#guarded(target, () =>
        client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: this.deps.timeoutMs }),
      );
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 1_000);
    if (entry) entry.tools = { at: Date.now(), list: tools };
    return tools;
  }

  /** Calls a tool upstream; the definition validates the output against its schema, when it has one. */
  async callTool(
    target: UpstreamTarget,
    definition: Tool,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const client = await this.#client(target);
    const entry = this.#entries.get(target.key);
    return this.#guarded(
      target,
      () =>
        new Promise<CallToolResult>((resolve, reject) => {
          entry?.inFlight.add(reject);
          client
            .callTool(
              { name: definition.name, arguments: args },
              { signal, timeout: this.deps.timeoutMs, toolDefinition: definition },
            )
            .then(resolve, reject)
            .finally(() => entry?.inFlight.delete(reject));
        }),
    );
  }

  /** Closes the clients of a connection (changed or deleted), or of one account at it. */
  async close(connectionId: string, accountKey?: string): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, entry] of this.#entries) {
      if (!key.startsWith(`${connectionId}:`)) continue;
      if (accountKey !== undefined && !key.startsWith(`${connectionId}:${accountKey}:`)) continue;
      this.#entries.delete(key);
      closing.push(this.#closeEntry(entry));
    }
    await Promise.all(closing);
  }

  async stop(): Promise<void> {
    clearInterval(this.#sweeper);
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map((entry) => this.#closeEntry(entry)));
  }

  /** How many clients are open (metrics, tests). */
  get size(): number {
    return this.#entries.size;
  }

  async #guarded<T>(target: UpstreamTarget, call: () => Promise<T>): Promise<T> {
    return this.deps.breakerFor(target.connectionId).run(async () => {
      try {
        return await call();
      } catch (error) {
        // A transport that failed is not reused: the next use connects afresh.
        if (isTransportFailure(error)) this.#drop(target.key);
        throw error;
      }
    });
  }

  #client(target: UpstreamTarget): Promise<Client> {
    const existing = this.#entries.get(target.key);
    if (existing) {
      existing.lastUsed = Date.now();
      return existing.client;
    }
    if (this.#entries.size >= MAX_CLIENTS) this.#sweep(true);
    const entry: Entry = { client: Promise.resolve(undefined as never), lastUsed: Date.now(), inFlight: new Set() };
    entry.client = this.#guarded(target, () => this.#connect(target, entry));
    entry.client.catch(() => this.#drop(target.key, entry));
    this.#entries.set(target.key, entry);
    return entry.client;
  }

  async #connect(target: UpstreamTarget, entry: Entry): Promise<Client> {
    const { Client } = await mcpClient();
    const client = new Client(
      { name: 'agent-service', version: SERVICE_VERSION },
      {
        // Over HTTP a 2026-07-28 server is spoken to in its revision, a 2025 one in its own; a stdio server would be
        // started twice to probe, so it is spoken to as the 2025 revisions speak.
        versionNegotiation: { mode: target.transport.kind === 'stdio' ? 'legacy' : 'auto' },
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (error || !tools) return;
              entry.tools = { at: Date.now(), list: tools };
              this.deps.onToolsChanged(target, tools);
            },
          },
        },
      },
    );
    client.onerror = (error) => {
      this.deps.logger.debug({ err: error, connection: target.connectionId }, 'upstream error');
      // A response cut off at the size limit ends its stream, not its request: the calls on this client fail now,
      // and the client (whose stream state is unknown) is not reused.
      if (/Cut off: the response/.test(String(error?.message))) {
        const cut = new OutboundLimitError('size', 'Cut off: the response exceeds the size limit');
        for (const reject of entry.inFlight) reject(cut);
        this.#drop(target.key, entry);
      }
    };
    client.onclose = () => this.#drop(target.key, entry);
    const transport = await this.#transport(target);
    const timeout = AbortSignal.timeout(this.deps.timeoutMs);
    try {
      await client.connect(transport, { timeout: this.deps.timeoutMs, signal: timeout });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    const server = client.getServerVersion();
    entry.info = {
      protocolVersion: client.getNegotiatedProtocolVersion(),
      server: server && { name: server.name, version: server.version },
    };
    return client;
  }

  async #transport(target: UpstreamTarget): Promise<Transport> {
    const spec = target.transport;
    if (spec.kind === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
      const transport = new StdioClientTransport({
        command: spec.command.command,
        args: spec.command.args,
        env: { ...inheritedEnv(), ...spec.command.env },
        stderr: 'pipe',
      });
      // The server's own diagnostics go to the debug log; an unread pipe would stall it.
      transport.stderr?.on('data', (chunk: Buffer) =>
        this.deps.logger.debug(
          { connection: target.connectionId, stderr: chunk.toString('utf8', 0, 2_000) },
          'upstream stderr',
        ),
      );
      return transport;
    }
    const options = {
      fetch: this.deps.fetch,
      requestInit: { headers: spec.headers },
      ...(spec.auth && { authProvider: spec.auth }),
    };
    const url = new URL(spec.url);
    const { SSEClientTransport, StreamableHTTPClientTransport } = await mcpClient();
    return spec.kind === 'sse' ? new SSEClientTransport(url, options) : new StreamableHTTPClientTransport(url, options);
  }

  #drop(key: string, entry?: Entry): void {
    const current = this.#entries.get(key);
    if (!current || (entry && current !== entry)) return;
    this.#entries.delete(key);
    void this.#closeEntry(current);
  }

  async #closeEntry(entry: Entry): Promise<void> {
    const client = await entry.client.catch(() => undefined);
    await client?.close().catch(() => undefined);
  }

  #sweep(all = false): void {
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      if (all || now - entry.lastUsed > IDLE_MS) this.#drop(key, entry);
    }
  }
}

/** The environment a stdio server starts with: the path and locale, never the service's secrets. */
function inheritedEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'NODE_OPTIONS'];
  return Object.fromEntries(keep.flatMap((key) => (process.env[key] ? [[key, process.env[key]]] : [])));
}

/** Whether the failure is of the connection itself (closed, refused, timed out), not an answer of the upstream. */
export function isTransportFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'number') return code === -32001 || code === -32000;
  const message = error instanceof Error ? error.message : String(error);
  return /closed|ECONNREFUSED|ECONNRESET|fetch failed|timed? ?out|socket|terminated|outbound/i.test(message);
}
