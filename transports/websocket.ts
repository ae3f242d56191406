import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { type WebSocket, WebSocketServer } from 'ws';
import { toAppError } from '../src/errors.js';
import type { Lifecycle } from '../src/lifecycle.js';
import type { Logger } from '../src/logger.js';
import type { McpCore } from '../src/mcp/core.js';
import { guardTransport } from '../src/mcp/guard.js';
import { authInfoFor } from '../src/mcp/server.js';
import type { Caller } from '../src/modules/auth/caller.js';

export const WEBSOCKET_PATH = '/mcp/ws';
const HEARTBEAT_MS = 30_000;

/**
 * One WebSocket connection as an MCP transport. Standard JSON-RPC 2.0 messages pass through; the spec's short form
 * `{method, params}` (no `jsonrpc`, no `id`) is answered with `{method, result}` or `{method, error}`.
 */
export class WebSocketServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  readonly #shortForm = new Map<string, string>();
  #next = 0;

  constructor(
    private readonly socket: WebSocket,
    private readonly authInfo: AuthInfo,
  ) {}

  start(): Promise<void> {
    this.socket.on('message', (data: Buffer) => this.#receive(data.toString('utf8')));
    this.socket.on('close', () => this.onclose?.());
    this.socket.on('error', (error) => this.onerror?.(error));
    return Promise.resolve();
  }

  #receive(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.#write({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: not JSON' } });
      return;
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.#write({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } });
      return;
    }
    const record = message as Record<string, unknown>;
    if (record.jsonrpc === undefined && typeof record.method === 'string') {
      const id = `ws-${++this.#next}`;
      this.#shortForm.set(id, record.method);
      this.onmessage?.(
        {
          jsonrpc: '2.0',
          id,
          method: record.method,
          ...(record.params !== undefined && { params: record.params }),
        } as JSONRPCMessage,
        {
          authInfo: this.authInfo,
        },
      );
      return;
    }
    this.onmessage?.(record as JSONRPCMessage, { authInfo: this.authInfo });
  }

  send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && ('result' in message || 'error' in message)) {
      const method = this.#shortForm.get(String(message.id));
      if (method !== undefined) {
        this.#shortForm.delete(String(message.id));
        this.#write('error' in message ? { method, error: message.error } : { method, result: message.result });
        return Promise.resolve();
      }
    }
    this.#write(message);
    return Promise.resolve();
  }

  #write(value: unknown): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(value));
  }

  close(): Promise<void> {
    this.socket.close(1000);
    return Promise.resolve();
  }
}

function refuse(socket: Duplex, status: number, reason: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ detail: reason });
  const lines = [
    `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : 'Too Many Requests'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

export interface WebSocketDeps {
  core: McpCore;
  lifecycle: Lifecycle;
  logger: Logger;
  resolveCaller: (headers: IncomingHttpHeaders) => Promise<Caller>;
  /** Whether a browser Origin may connect (cross-site WebSocket hijacking). */
  originAllowed: (origin: string | undefined) => boolean;
  maxPayloadBytes: number;
}

/**
 * MCP over WebSocket at `/mcp/ws`. The credential (Bearer header, X-API-Key or session cookie) is checked on the
 * upgrade; the connection speaks for that caller until it closes, its credential expires, or the service stops.
 */
export class WebSocketEndpoint {
  readonly #wss: WebSocketServer;
  readonly #sockets = new Set<WebSocket>();
  readonly #heartbeat: NodeJS.Timeout;

  constructor(private readonly deps: WebSocketDeps) {
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: deps.maxPayloadBytes,
      // The SDK's client asks for the `mcp` subprotocol; clients that ask for none are welcome too.
      handleProtocols: (protocols) => (protocols.has('mcp') ? 'mcp' : false),
    });
    const alive = new WeakSet<WebSocket>();
    this.#heartbeat = setInterval(() => {
      for (const socket of this.#sockets) {
        if (!alive.has(socket)) {
          socket.terminate();
          continue;
        }
        alive.delete(socket);
        socket.ping();
      }
    }, HEARTBEAT_MS);
    this.#heartbeat.unref();
    this.#wss.on('connection', (socket: WebSocket) => {
      alive.add(socket);
      socket.on('pong', () => alive.add(socket));
    });
    deps.lifecycle.onStop(() => this.close());
  }

  get size(): number {
    return this.#sockets.size;
  }

  /** Takes the upgrade if it is for `/mcp/ws`; returns false otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== WEBSOCKET_PATH) return false;
    void this.#accept(req, socket, head);
    return true;
  }

  async #accept(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { core, lifecycle } = this.deps;
    if (lifecycle.phase !== 'running') return refuse(socket, 503, 'The service is not running');
    if (!this.deps.originAllowed(req.headers.origin)) return refuse(socket, 403, 'Origin not allowed');
    let caller: Caller;
    let release: () => void;
    try {
      caller = await this.deps.resolveCaller(req.headers);
      release = core.policy.openStream(caller);
    } catch (thrown) {
      const error = toAppError(thrown);
      return refuse(
        socket,
        error.status,
        error.message,
        error.status === 401 ? { 'WWW-Authenticate': 'Bearer realm="agent-service"' } : {},
      );
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      this.#wss.emit('connection', ws, req);
      void this.#serve(ws, caller, release);
    });
  }

  async #serve(ws: WebSocket, caller: Caller, release: () => void): Promise<void> {
    const { core } = this.deps;
    this.#sockets.add(ws);
    core.metrics.connections.inc({ server: 'websocket' });
    const server = core.createServer();
    const transport = new WebSocketServerTransport(ws, authInfoFor(caller));
    // A connection outlives no credential: it closes when the token it was opened with expires.
    const expiry =
      caller.expiresAt !== undefined
        ? setTimeout(() => ws.close(1008, 'credentials expired'), Math.max(0, caller.expiresAt * 1000 - Date.now()))
        : undefined;
    expiry?.unref();
    ws.once('close', () => {
      this.#sockets.delete(ws);
      clearTimeout(expiry);
      release();
      core.metrics.connections.dec({ server: 'websocket' });
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    guardTransport(transport, { policy: core.policy, metrics: core.metrics, fallbackCaller: caller, rateLimit: true });
  }

  close(): void {
    clearInterval(this.#heartbeat);
    for (const socket of this.#sockets) socket.close(1001, 'server shutting down');
  }
}
