import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  BadRequestError,
  CommonErrorCode,
  ForbiddenError,
  ServiceUnavailableError,
  UnauthorizedError,
  toAppError,
} from '../src/errors.js';
import { type ErrorArea, rawHttpResponse, renderError } from '../src/http/render-errors.js';
import type { Lifecycle } from '../src/lifecycle.js';
import type { Logger } from '../src/logger.js';
import type { McpCore } from '../src/mcp/core.js';
import { type TransportGuard, guardTransport } from '../src/mcp/guard.js';
import { admitMessage } from '../src/mcp/messages.js';
import { authInfoFor } from '../src/mcp/server.js';
import { type Caller, CallerErrorCode } from '../src/ports/caller.js';
import { awaitAuthMessage } from './first-message-auth.js';
import { type StreamSlot, openStreamSlot } from './stream-slot.js';

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
    this.socket.on('message', (data: Buffer) => this.deliver(data));
    this.socket.on('close', () => this.onclose?.());
    this.socket.on('error', (error) => this.onerror?.(error));
    return Promise.resolve();
  }

  /** Handles one message from the client (also those that arrived before the transport started). */
  deliver(data: Buffer): void {
    const text = data.toString('utf8');
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
      const method = record.method;
      const id = `ws-${++this.#next}`;
      const admitted = admitMessage({
        jsonrpc: '2.0',
        id,
        method,
        ...(record.params !== undefined && { params: record.params }),
      });
      if ('refusal' in admitted) return this.#write({ method, error: admitted.refusal.error });
      this.#shortForm.set(id, method);
      this.onmessage?.(admitted.message, { authInfo: this.authInfo });
      return;
    }
    const admitted = admitMessage(record);
    if ('refusal' in admitted) return this.#write(admitted.refusal);
    this.onmessage?.(admitted.message, { authInfo: this.authInfo });
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

export interface WebSocketDeps {
  core: McpCore;
  lifecycle: Lifecycle;
  logger: Logger;
  resolveCaller: (headers: IncomingHttpHeaders) => Promise<Caller>;
  /** Whether a browser Origin may connect (cross-site WebSocket hijacking). */
  originAllowed: (origin: string | undefined) => boolean;
  maxPayloadBytes: number;
  /** The WWW-Authenticate challenge of a 401, the same one every HTTP route sends. */
  wwwAuthenticate?: string;
  /** How long a socket opened with `?auth=message` may take to send its auth message. */
  authTimeoutMs?: number;
  /** How many sockets may wait for their auth message at once; beyond that the upgrade is refused with 503. */
  maxPendingAuth?: number;
}

/** The subprotocol the server answers with; the SDK's client asks for it. */
export const MCP_SUBPROTOCOL = 'mcp';
/** A browser's way to present an access token: the subprotocol `bearer.<token>`, offered next to `mcp`. */
export const BEARER_SUBPROTOCOL_PREFIX = 'bearer.';
const AUTH_TIMEOUT_MS = 5_000;
const MAX_PENDING_AUTH = 256;
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** A token as a subprotocol must be an HTTP token itself: access tokens (JWTs, base64url) are. */
const SUBPROTOCOL_TOKEN = /^[A-Za-z0-9\-._~+]+$/;
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** Where the upgrade's credential comes from: its headers (possibly a bearer subprotocol), or a first message. */
type UpgradeCredential = { via: 'headers'; headers: IncomingHttpHeaders } | { via: 'message' };

function offeredSubprotocols(headers: IncomingHttpHeaders): string[] {
  const header = headers['sec-websocket-protocol'];
  if (header === undefined) return [];
  return header
    .split(',')
    .map((protocol) => protocol.trim())
    .filter(Boolean);
}

/** The refusals `ws` would otherwise write itself, in its own shape: answered here in the wire's shape instead. */
export function checkHandshake(req: IncomingMessage): void {
  if (req.method !== 'GET')
    throw new BadRequestError('A WebSocket upgrade must be a GET request', { code: CommonErrorCode.BadRequest });
  if (req.headers.upgrade?.toLowerCase() !== 'websocket')
    throw new BadRequestError('The Upgrade header must be "websocket"', { code: CommonErrorCode.BadRequest });
  if (!WEBSOCKET_KEY.test(req.headers['sec-websocket-key'] ?? ''))
    throw new BadRequestError('Missing or invalid Sec-WebSocket-Key header', { code: CommonErrorCode.BadRequest });
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8')
    throw new BadRequestError('Unsupported Sec-WebSocket-Version: use 13', {
      code: CommonErrorCode.BadRequest,
      headers: { 'Sec-WebSocket-Version': '13, 8' },
    });
}

/**
 * The credential of an upgrade, checked for ambiguity. Browsers cannot set headers, so besides the usual headers
 * (Authorization, X-API-Key, the session cookie) a client may offer the subprotocol `bearer.<token>` next to `mcp`,
 * or ask with `?auth=message` to send `{"type":"auth","token":"…"}` as its first message. One credential only: a
 * cookie, which a browser sends by itself, gives way to the explicit one.
 */
function credentialOf(req: IncomingMessage): UpgradeCredential {
  const { headers } = req;
  const offered = offeredSubprotocols(headers);
  const bearers = offered.filter((protocol) => protocol.startsWith(BEARER_SUBPROTOCOL_PREFIX));
  const byMessage = new URL(req.url ?? '/', 'http://localhost').searchParams.get('auth') === 'message';
  const headerCredential = headers.authorization !== undefined || headers['x-api-key'] !== undefined;
  if (bearers.length > 1)
    throw new BadRequestError('Offer at most one bearer.<token> subprotocol', { code: CommonErrorCode.BadRequest });
  if (bearers.length + Number(byMessage) + Number(headerCredential) > 1)
    throw new BadRequestError('Present one credential: a header, a bearer.<token> subprotocol, or ?auth=message', {
      code: CommonErrorCode.BadRequest,
    });
  if (byMessage) return { via: 'message' };
  if (bearers.length === 0) return { via: 'headers', headers };
  // The answer names one subprotocol of the offer, never the token: `mcp` must be offered with it.
  if (!offered.includes(MCP_SUBPROTOCOL))
    throw new BadRequestError('Offer the mcp subprotocol together with bearer.<token>', {
      code: CommonErrorCode.BadRequest,
    });
  const token = bearers[0]!.slice(BEARER_SUBPROTOCOL_PREFIX.length);
  if (!SUBPROTOCOL_TOKEN.test(token))
    throw new UnauthorizedError('The bearer.<token> subprotocol carries no valid token', {
      code: CallerErrorCode.InvalidToken,
    });
  return { via: 'headers', headers: { ...headers, authorization: `Bearer ${token}` } };
}

/** Answers a refused upgrade with the HTTP renderer's status, body and headers, then closes the connection. */
export function refuseUpgrade(
  socket: Duplex,
  thrown: unknown,
  options: { area: ErrorArea; url: string; requestId: string; logger: Logger; wwwAuthenticate?: string },
): void {
  const { requestId, logger } = options;
  const error = toAppError(thrown);
  const rendered = renderError(options.area, error, requestId, options.wwwAuthenticate);
  rendered.headers['X-Request-Id'] = requestId;
  const fields = { req: { id: requestId }, url: options.url, status: rendered.status, code: error.code };
  if (rendered.status >= 500 && !(error instanceof ServiceUnavailableError))
    logger.error({ ...fields, err: error.cause ?? error }, 'websocket upgrade failed');
  else logger.warn(fields, `websocket upgrade refused: ${error.message}`);
  if (socket.writable) socket.end(rawHttpResponse(rendered));
  else socket.destroy();
}

/** The client's `X-Request-Id` when it is sane, else a new one: refusals and their log lines carry it. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * MCP over WebSocket at `/mcp/ws`. The credential is checked on the upgrade (headers or a `bearer.<token>`
 * subprotocol), or, with `?auth=message`, in the first message; the connection speaks for that caller until it
 * closes, its credential expires, or the service stops. A refused upgrade is answered by the HTTP error renderer,
 * so it carries the same status, body and headers as any other MCP route.
 */
export class WebSocketEndpoint {
  readonly #wss: WebSocketServer;
  readonly #sockets = new Set<WebSocket>();
  /** The guard of each served socket: what it waits for before the socket closes at shutdown. */
  readonly #guards = new WeakMap<WebSocket, TransportGuard>();
  /** Sockets upgraded with `?auth=message` that have not authenticated yet. */
  readonly #pending = new Set<WebSocket>();
  /** Sockets that answered the last ping (or have not been pinged yet). */
  readonly #alive = new WeakSet<WebSocket>();

  constructor(private readonly deps: WebSocketDeps) {
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: deps.maxPayloadBytes,
      // The SDK's client asks for the `mcp` subprotocol; clients that ask for none are welcome too. Whatever else
      // is offered (a `bearer.<token>`) is never echoed.
      handleProtocols: (protocols) => (protocols.has(MCP_SUBPROTOCOL) ? MCP_SUBPROTOCOL : false),
    });
    this.#wss.on('connection', (socket: WebSocket) => {
      this.#alive.add(socket);
      socket.on('pong', () => this.#alive.add(socket));
    });
    // Served sockets close through their stream slots; these have none yet.
    deps.lifecycle.onStop(() => {
      for (const socket of this.#pending) socket.close(1001, 'server shutting down');
    });
  }

  get size(): number {
    return this.#sockets.size;
  }

  /**
   * The stream slot of a connection, opened (and refused over the caller's limit) before the upgrade completes;
   * `socketOf` gives its WebSocket once there is one. The slot closes the socket on shutdown, pings it, and ends
   * it when it stops answering.
   */
  #openSlot(caller: Caller, endsWith: Duplex | WebSocket, socketOf: () => WebSocket | undefined): StreamSlot {
    const { core, lifecycle } = this.deps;
    return openStreamSlot({ policy: core.policy, metrics: core.metrics, lifecycle }, caller, {
      server: 'websocket',
      endsWith,
      // Requests in flight are answered first (at the drain's deadline, with the stopping error).
      onStop: () => {
        const socket = socketOf();
        const guard = socket && this.#guards.get(socket);
        void (guard?.settle(lifecycle.deadline) ?? Promise.resolve()).then(() =>
          socket?.close(1001, 'server shutting down'),
        );
      },
      heartbeat: {
        intervalMs: HEARTBEAT_MS,
        beat: () => {
          const socket = socketOf();
          if (!socket) return;
          if (!this.#alive.has(socket)) return socket.terminate();
          this.#alive.delete(socket);
          socket.ping();
        },
      },
    });
  }

  /** Takes the upgrade if it is for `/mcp/ws`; returns false otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== WEBSOCKET_PATH) return false;
    void this.#accept(req, socket, head);
    return true;
  }

  async #accept(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { lifecycle } = this.deps;
    const requestId = requestIdOf(req);
    // Node stops watching the socket once it is handed over for an upgrade: a reset before `ws` takes it over
    // must not go unhandled.
    const onError = () => socket.destroy();
    socket.on('error', onError);
    let slot: StreamSlot | undefined;
    try {
      if (lifecycle.phase !== 'running')
        throw new ServiceUnavailableError('The service is not running', {
          code: CommonErrorCode.ServiceUnavailable,
          headers: { 'Retry-After': '1' },
        });
      checkHandshake(req);
      if (!this.deps.originAllowed(req.headers.origin))
        throw new ForbiddenError('Origin not allowed', { code: CommonErrorCode.Forbidden });
      const credential = credentialOf(req);
      if (credential.via === 'message') {
        if (this.#pending.size >= (this.deps.maxPendingAuth ?? MAX_PENDING_AUTH))
          throw new ServiceUnavailableError('Too many connections awaiting authentication; retry shortly', {
            code: CommonErrorCode.ServiceUnavailable,
            headers: { 'Retry-After': '1' },
          });
        socket.off('error', onError);
        this.#wss.handleUpgrade(req, socket, head, (ws) => {
          this.#wss.emit('connection', ws, req);
          this.#awaitAuthMessage(ws, requestId);
        });
        return;
      }
      const caller = await this.deps.resolveCaller(credential.headers);
      let upgraded: WebSocket | undefined;
      const held = this.#openSlot(caller, socket, () => upgraded);
      slot = held;
      // The client may have gone while its credential was checked, or `ws` may still refuse the handshake:
      // either way the stream slot goes back (when the socket closes).
      if (socket.destroyed) return held.release();
      socket.off('error', onError);
      this.#wss.handleUpgrade(req, socket, head, (ws) => {
        upgraded = ws;
        this.#wss.emit('connection', ws, req);
        void this.#serve(ws, caller, held, []);
      });
    } catch (thrown) {
      slot?.release();
      this.#refuse(socket, thrown, requestId);
    }
  }

  #refuse(socket: Duplex, thrown: unknown, requestId: string): void {
    refuseUpgrade(socket, thrown, {
      area: 'mcp',
      url: WEBSOCKET_PATH,
      requestId,
      logger: this.deps.logger,
      ...(this.deps.wwwAuthenticate && { wwwAuthenticate: this.deps.wwwAuthenticate }),
    });
  }

  /**
   * A socket opened with `?auth=message`: its first message must be `{"type":"auth","token":"<access token>"}`
   * (the playground's shape), answered `{"type":"auth_success","user_id"}`; anything else, a bad token or silence
   * beyond the timeout is answered `{"type":"auth_error","message"}` and closed (4401, or 4429 over the stream
   * limit). Messages sent while the token is checked are kept and delivered once it is accepted.
   */
  #awaitAuthMessage(ws: WebSocket, requestId: string): void {
    awaitAuthMessage({
      ws,
      pending: this.#pending,
      requestId,
      url: WEBSOCKET_PATH,
      logger: this.deps.logger,
      timeoutMs: this.deps.authTimeoutMs ?? AUTH_TIMEOUT_MS,
      maxEarlyBytes: this.deps.maxPayloadBytes,
      authenticate: (token) => this.deps.resolveCaller({ authorization: `Bearer ${token}` }),
      accept: (caller) => {
        // Over the caller's stream limit, this throws the 429 the auth_error reports.
        const slot = this.#openSlot(caller, ws, () => ws);
        return Promise.resolve((early: Buffer[]) => void this.#serve(ws, caller, slot, early));
      },
    });
  }

  async #serve(ws: WebSocket, caller: Caller, slot: StreamSlot, early: Buffer[]): Promise<void> {
    const { core } = this.deps;
    this.#sockets.add(ws);
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
      slot.release();
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    this.#guards.set(
      ws,
      guardTransport(transport, {
        policy: core.policy,
        metrics: core.metrics,
        fallbackCaller: caller,
        rateLimit: true,
      }),
    );
    for (const data of early) transport.deliver(data);
  }

  close(): void {
    for (const socket of [...this.#sockets, ...this.#pending]) socket.close(1001, 'server shutting down');
  }
}
