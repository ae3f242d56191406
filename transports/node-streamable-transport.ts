import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
  type RequestInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { isAnswerMessage, isInitializeMessage, isRequestMessage, parseMessage } from '../src/mcp/messages.js';
import { flattenHead } from './stream-text.js';

/** The SDK's own bounds: a request body and a batch. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const MAX_BATCH = 100;
/** The stream a session's GET opens, as the SDK names it (event stores key their streams by it). */
const STANDALONE = '_GET_stream';
const KEEP_ALIVE_MS = 15_000;
/**
 * A POST's stream sends its head with its first event, so that a quick answer leaves in one write; a stream with
 * nothing to say for this long sends its head alone, so that the client knows it was accepted.
 */
const HEAD_DELAY_MS = 250;
/** Protocol revisions from which a client understands an event without data (the priming event). */
const PRIMING_FROM = '2025-11-25';

const SSE_HEADERS: OutgoingHttpHeaders = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

export interface NodeStreamableHttpOptions {
  /** A session's id, made at its initialize request; none for a stateless transport (one per request). */
  sessionIdGenerator?: (() => string) | undefined;
  onsessioninitialized?: (sessionId: string) => void | Promise<void>;
  onsessionclosed?: (sessionId: string) => void | Promise<void>;
  /** Answer requests with one JSON body instead of an event stream. */
  enableJsonResponse?: boolean;
  /** Keeps the events of each stream so that a client can resume it with `Last-Event-ID`. */
  eventStore?: EventStore;
  /** The reconnection delay a priming event suggests (`retry:`), in milliseconds. */
  retryInterval?: number;
  keepAliveMs?: number;
  enableDnsRebindingProtection?: boolean;
  allowedHosts?: string[];
  allowedOrigins?: string[];
}

/** A request as the transport reads it: Node's own, with the caller's AuthInfo set by the route. */
export type AuthenticatedRequest = IncomingMessage & { auth?: AuthInfo };

/** One open HTTP answer the transport writes events (or one JSON body) to. */
interface Connection {
  res: ServerResponse;
  json: boolean;
  /** Whether its head is written; a POST's stream writes it with its first event. */
  opened: boolean;
  /** The priming event, held back to leave with the head and the first answer in one write. */
  primed?: string;
  timer?: NodeJS.Timeout | undefined;
  /** Events already sent by the replay that opened it: a send racing the replay must not repeat them. */
  replayed?: Set<EventId>;
}

/** What one POST is waiting for: the answers to its requests, sent together when the last one is ready. */
interface Exchange {
  ids: RequestId[];
  answers: Map<RequestId, JSONRPCMessage>;
}

/**
 * What a session has open or in flight, by stream. An idle session (most of them, most of the time) holds none of
 * it: the four collections are made for its first request and dropped again once they are all empty, which saves
 * about 700 bytes of each idle session's heap.
 */
interface InFlight {
  /** Open answers by stream id. */
  connections: Map<StreamId, Connection>;
  /** Which stream answers each request in flight. */
  streamOf: Map<RequestId, StreamId>;
  exchanges: Map<StreamId, Exchange>;
  /** Streams whose client holds an event id, so that an answer the stream missed can be replayed. */
  resumable: Set<StreamId>;
}

/** Request info with the URL built only if a handler reads it. */
class LazyRequestInfo implements RequestInfo {
  #url: URL | undefined;
  constructor(
    readonly headers: RequestInfo['headers'],
    private readonly path: string,
  ) {}
  get url(): URL {
    this.#url ??= new URL(this.path, `http://${String(this.headers.host ?? 'localhost')}`);
    return this.#url;
  }
}

/**
 * MCP streamable HTTP (2025 era) written on Node's request and response: the SDK's `Transport` interface under the
 * SDK's own `Server`, speaking exactly what the SDK's `StreamableHTTPServerTransport` speaks (status codes, error
 * bodies, session and protocol-version checks, priming events, resumption with `Last-Event-ID`, one standalone GET
 * stream, keep-alive comments), without turning each request into a web `Request` and each answer into a web
 * stream and back. An answer and its stream's end leave in one write.
 */
export class NodeStreamableHttpTransport implements Transport {
  sessionId?: string | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;

  readonly #options: NodeStreamableHttpOptions;
  readonly #keepAliveMs: number;
  /** What the session has open or in flight; nothing while it is idle (see `InFlight`). */
  #live: InFlight | undefined;
  #started = false;
  #initialised = false;
  #handled = false;
  #closed = false;
  #nextStream = 0;

  constructor(options: NodeStreamableHttpOptions = {}) {
    this.#options = options;
    this.#keepAliveMs = options.keepAliveMs ?? KEEP_ALIVE_MS;
  }

  start(): Promise<void> {
    if (this.#started) return Promise.reject(new Error('Transport already started'));
    this.#started = true;
    return Promise.resolve();
  }

  /** Answers one HTTP request: POST (messages), GET (the session's stream) or DELETE (the session's end). */
  async handleRequest(req: AuthenticatedRequest, res: ServerResponse, parsedBody?: unknown): Promise<void> {
    if (this.#closed) return this.#error(res, 404, -32001, 'Session not found');
    // A stateless transport serves one request: reused, two clients' request ids would collide.
    if (!this.#options.sessionIdGenerator && this.#handled)
      throw new Error('Stateless transport cannot be reused across requests. Create a new transport per request.');
    this.#handled = true;
    if (!this.#hostsAllowed(req, res)) return;
    switch (req.method) {
      case 'POST':
        return this.#post(req, res, parsedBody);
      case 'GET':
        return this.#get(req, res);
      case 'DELETE':
        return this.#delete(req, res);
      default:
        this.#fail('Method not allowed.');
        return this.#error(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
    }
  }

  async #post(req: AuthenticatedRequest, res: ServerResponse, parsedBody: unknown): Promise<void> {
    const accept = req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream'))
      return this.#refuse(
        res,
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
    if (!isJsonContentType(req.headers['content-type'] ?? null))
      return this.#refuse(res, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');

    let raw = parsedBody;
    if (raw === undefined) {
      try {
        const body = await readBody(req);
        if (body === TOO_LARGE) {
          const message = `Payload Too Large: Request body must not exceed ${MAX_BODY_BYTES} bytes`;
          return this.#refuse(res, 413, -32000, message);
        }
        raw = JSON.parse(body);
      } catch {
        // Not JSON, or not all of it: the client went away mid-body.
        return this.#refuse(res, 400, -32700, 'Parse error: Invalid JSON');
      }
    }
    if (Array.isArray(raw) && raw.length > MAX_BATCH)
      return this.#refuse(res, 400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`);
    let messages: JSONRPCMessage[];
    try {
      messages = Array.isArray(raw) ? raw.map(parseMessage) : [parseMessage(raw)];
    } catch {
      return this.#refuse(res, 400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
    // Closed while the body was read: no session is started on a transport whose streams are gone.
    if (this.#closed) return this.#error(res, 404, -32001, 'Session not found');

    const initialize = messages.find((message) => isInitializeMessage(message));
    if (initialize) {
      if (this.#initialised && this.sessionId !== undefined)
        return this.#refuse(res, 400, -32600, 'Invalid Request: Server already initialized');
      if (messages.length > 1)
        return this.#refuse(res, 400, -32600, 'Invalid Request: Only one initialization request is allowed');
      this.sessionId = this.#options.sessionIdGenerator?.();
      this.#initialised = true;
      if (this.sessionId !== undefined && this.#options.onsessioninitialized)
        await this.#options.onsessioninitialized(this.sessionId);
    } else if (!this.#sessionValid(req, res) || !this.#versionValid(req, res)) {
      return;
    }
    if (this.#closed) return this.#error(res, 404, -32001, 'Session not found');

    const requestInfo = new LazyRequestInfo(req.headers, req.url ?? '/');
    const authInfo = req.auth;
    if (!messages.some(isRequestMessage)) {
      for (const message of messages) this.onmessage?.(message, { authInfo, requestInfo });
      res.writeHead(202).end();
      return;
    }

    const streamId = String(++this.#nextStream);
    const version = initialize ? initialize.params.protocolVersion : versionOf(req);
    const connection: Connection = { res, json: this.#options.enableJsonResponse === true, opened: false };
    const exchange: Exchange = { ids: [], answers: new Map() };
    for (const message of messages) {
      if (!isRequestMessage(message) || exchange.ids.includes(message.id)) continue;
      exchange.ids.push(message.id);
      this.#inFlight().streamOf.set(message.id, streamId);
    }
    this.#inFlight().exchanges.set(streamId, exchange);
    this.#inFlight().connections.set(streamId, connection);
    res.once('close', () => this.#disconnected(streamId, connection));

    const resumable = !connection.json && this.#options.eventStore !== undefined && version >= PRIMING_FROM;
    try {
      if (resumable) await this.#prime(streamId, connection);
      for (const message of messages) {
        const extra: MessageExtraInfo = { authInfo, requestInfo };
        if (resumable && isRequestMessage(message)) {
          const id = message.id;
          extra.closeSSEStream = () => this.closeSSEStream(id);
          extra.closeStandaloneSSEStream = () => this.closeStandaloneSSEStream();
        }
        this.onmessage?.(message, extra);
      }
    } catch (error) {
      // Nothing can answer these requests now: release them, and answer the POST as the SDK does.
      this.#release(streamId, exchange);
      this.#live?.resumable.delete(streamId);
      this.#live?.connections.delete(streamId);
      this.#tidy();
      clearTimeout(connection.timer);
      if (connection.opened) res.end();
      else {
        this.onerror?.(asError(error));
        this.#error(res, 400, -32700, 'Parse error', { data: String(error) });
      }
      return;
    }
    if (!connection.json && this.#live?.connections.get(streamId) === connection && !res.writableEnded)
      this.#arm(connection, !connection.opened);
  }

  async #get(req: AuthenticatedRequest, res: ServerResponse): Promise<void> {
    if (!req.headers.accept?.includes('text/event-stream'))
      return this.#refuse(res, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
    if (!this.#sessionValid(req, res) || !this.#versionValid(req, res)) return;
    const lastEventId = req.headers['last-event-id'];
    if (this.#options.eventStore && typeof lastEventId === 'string' && lastEventId !== '')
      return this.#replay(lastEventId, res);
    if (this.#live?.connections.has(STANDALONE))
      return this.#refuse(res, 409, -32000, 'Conflict: Only one SSE stream is allowed per session');
    const connection: Connection = { res, json: false, opened: false };
    this.#inFlight().connections.set(STANDALONE, connection);
    res.once('close', () => this.#disconnected(STANDALONE, connection));
    // The client waits for the head of a stream that may stay quiet for long.
    this.#openNow(connection);
    flattenHead(res);
    this.#arm(connection, false);
  }

  async #replay(lastEventId: string, res: ServerResponse): Promise<void> {
    const store = this.#options.eventStore!;
    try {
      if (store.getStreamIdForEventId) {
        const known = await store.getStreamIdForEventId(lastEventId);
        if (!known) return this.#refuse(res, 400, -32000, 'Invalid event ID format');
        if (this.#live?.connections.has(known))
          return this.#refuse(res, 409, -32000, 'Conflict: Stream already has an active connection');
      }
      const connection: Connection = { res, json: false, opened: false, replayed: new Set() };
      const resumed: { streamId?: StreamId; cancelled?: boolean } = {};
      res.once('close', () => {
        resumed.cancelled = true;
        if (resumed.streamId !== undefined) this.#disconnected(resumed.streamId, connection);
        else clearTimeout(connection.timer);
      });
      const streamId = await store.replayEventsAfter(lastEventId, {
        send: (eventId, message) => {
          this.#write(connection, message, eventId);
          connection.replayed!.add(eventId);
          return Promise.resolve();
        },
      });
      resumed.streamId = streamId;
      // Closed, or abandoned by the client, while the store replayed: hand out nothing no one could clean up.
      if (this.#closed || resumed.cancelled) {
        if (connection.opened) res.end();
        else this.#error(res, 404, -32001, 'Session not found');
        return;
      }
      this.#end(streamId);
      this.#inFlight().connections.set(streamId, connection);
      this.#inFlight().resumable.add(streamId);
      if (!connection.opened) this.#openNow(connection);
      this.#arm(connection, false);
    } catch (error) {
      this.onerror?.(asError(error));
      if (!res.headersSent) this.#error(res, 500, -32000, 'Error replaying events');
      else res.end();
    }
  }

  async #delete(req: AuthenticatedRequest, res: ServerResponse): Promise<void> {
    if (!this.#sessionValid(req, res) || !this.#versionValid(req, res)) return;
    try {
      if (this.sessionId !== undefined) await this.#options.onsessionclosed?.(this.sessionId);
      res.writeHead(200).end();
    } finally {
      await this.close();
    }
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    // Closed: every stream is gone, and a late answer has nowhere to go.
    if (this.#closed) return;
    const answer = isAnswerMessage(message);
    const requestId = answer ? message.id : options?.relatedRequestId;
    const store = this.#options.eventStore;

    if (requestId === undefined) {
      if (answer)
        throw new Error('Cannot send a response on a standalone SSE stream unless resuming a previous client request');
      // Stored even while no stream is open, for the client to replay when it reconnects.
      const eventId = store ? await store.storeEvent(STANDALONE, message) : undefined;
      const connection = this.#live?.connections.get(STANDALONE);
      if (connection && (eventId === undefined || !connection.replayed?.has(eventId)))
        this.#write(connection, message, eventId);
      return;
    }

    const streamId = this.#live?.streamOf.get(requestId);
    if (streamId === undefined) throw new Error(`No connection established for request ID: ${String(requestId)}`);
    let connection = this.#live?.connections.get(streamId);
    let eventId: EventId | undefined;
    const streamed = !this.#options.enableJsonResponse;
    if (streamed && store) {
      // Stored even if the stream is gone, for a resume; read the stream again after: a resume may replace it.
      eventId = await store.storeEvent(streamId, message);
      connection = this.#live?.connections.get(streamId);
    }
    const exchange = this.#live?.exchanges.get(streamId);
    const last = answer && exchange !== undefined && this.#lastAnswer(exchange, requestId, message);
    if (streamed && connection && (eventId === undefined || !connection.replayed?.has(eventId))) {
      this.#write(connection, message, eventId, last);
      if (eventId !== undefined) this.#inFlight().resumable.add(streamId);
    }
    if (!last || !exchange) return;

    this.#release(streamId, exchange);
    if (!connection) {
      const replayable = streamed && store !== undefined && this.#live?.resumable.delete(streamId) === true;
      // Closed meanwhile, stored for the client's resume, or a JSON answer whose client left: nowhere to go.
      if (this.#closed || replayable || this.#options.enableJsonResponse) return;
      throw new Error(`No connection established for request ID: ${String(requestId)}`);
    }
    this.#live?.resumable.delete(streamId);
    if (connection.json) {
      const answers = exchange.ids.map((id) => exchange.answers.get(id));
      this.#live?.connections.delete(streamId);
      this.#tidy();
      this.#respondJson(connection.res, answers.length === 1 ? answers[0] : answers);
    } else {
      // Usually ended by the last event's own write already.
      this.#end(streamId);
    }
  }

  /** Ends the stream answering a request; a client that can resume reconnects with its last event id. */
  closeSSEStream(requestId: RequestId): void {
    const streamId = this.#live?.streamOf.get(requestId);
    if (streamId !== undefined) this.#end(streamId);
  }

  /** Ends the session's GET stream; the client reconnects to it. */
  closeStandaloneSSEStream(): void {
    this.#end(STANDALONE);
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    for (const streamId of [...(this.#live?.connections.keys() ?? [])]) this.#end(streamId);
    this.#live = undefined;
    this.onclose?.();
    return Promise.resolve();
  }

  /** Records an answer; true when it completes its exchange (every request of the POST answered). */
  #lastAnswer(exchange: Exchange, requestId: RequestId, message: JSONRPCMessage): boolean {
    exchange.answers.set(requestId, message);
    return exchange.answers.size >= exchange.ids.length && exchange.ids.every((id) => exchange.answers.has(id));
  }

  #release(streamId: StreamId, exchange: Exchange): void {
    for (const id of exchange.ids) if (this.#live?.streamOf.get(id) === streamId) this.#live.streamOf.delete(id);
    this.#live?.exchanges.delete(streamId);
    this.#tidy();
  }

  /**
   * The priming event: an event id without data, so that a stream cut before its first answer can be resumed. It
   * leaves with the stream's head, at its first event or once the head can wait no longer.
   */
  async #prime(streamId: StreamId, connection: Connection): Promise<void> {
    const eventId = await this.#options.eventStore!.storeEvent(streamId, {} as JSONRPCMessage);
    const retry = this.#options.retryInterval === undefined ? '' : `retry: ${this.#options.retryInterval}\n`;
    connection.primed = `id: ${eventId}\n${retry}data: \n\n`;
    this.#inFlight().resumable.add(streamId);
  }

  #write(connection: Connection, message: JSONRPCMessage, eventId: EventId | undefined, last = false): void {
    const id = eventId ? `id: ${eventId}\n` : '';
    this.#send(connection, `event: message\n${id}data: ${JSON.stringify(message)}\n\n`, last);
  }

  /** Writes one event, and ends the stream with it when it is the last: head, event and end in one write. */
  #send(connection: Connection, frame: string, last: boolean): void {
    const { res } = connection;
    if (res.writableEnded || res.destroyed) return;
    const data = connection.opened ? frame : this.#open(connection) + frame;
    if (last) {
      clearTimeout(connection.timer);
      res.end(data);
    } else res.write(data);
  }

  /** Sets the stream's head; answers the priming event held back for it, to be written with the head. */
  #open(connection: Connection): string {
    connection.opened = true;
    const headers = this.sessionId === undefined ? SSE_HEADERS : { ...SSE_HEADERS, 'mcp-session-id': this.sessionId };
    connection.res.writeHead(200, headers);
    const primed = connection.primed ?? '';
    connection.primed = undefined;
    return primed;
  }

  /** Sends the stream's head now, with the priming event if one is held back. */
  #openNow(connection: Connection): void {
    const primed = this.#open(connection);
    if (primed) connection.res.write(primed);
    else connection.res.flushHeaders();
  }

  /**
   * Keeps a quiet stream alive with comments; a POST stream that has written nothing yet sends its head first,
   * after a short delay (most answers come sooner and carry it).
   */
  #arm(connection: Connection, headFirst: boolean): void {
    if (this.#closed) return;
    const keepAlive = this.#keepAliveMs;
    const tick = () => {
      const { res } = connection;
      if (res.writableEnded || res.destroyed) return;
      if (!connection.opened) this.#openNow(connection);
      else res.write(': keepalive\n\n');
      if (Number.isFinite(keepAlive) && keepAlive >= 1) connection.timer = setTimeout(tick, keepAlive).unref();
    };
    const first = headFirst ? HEAD_DELAY_MS : keepAlive;
    if (headFirst || (Number.isFinite(keepAlive) && keepAlive >= 1))
      connection.timer = setTimeout(tick, Math.min(first, 2 ** 31 - 1)).unref();
  }

  #inFlight(): InFlight {
    this.#live ??= { connections: new Map(), streamOf: new Map(), exchanges: new Map(), resumable: new Set() };
    return this.#live;
  }

  /** Drops the in-flight collections once nothing is left in them. */
  #tidy(): void {
    const live = this.#live;
    if (live && !live.connections.size && !live.streamOf.size && !live.exchanges.size && !live.resumable.size)
      this.#live = undefined;
  }

  /** Ends a stream's answer and forgets it (a client that holds an event id resumes it). */
  #end(streamId: StreamId): void {
    const connection = this.#live?.connections.get(streamId);
    if (!connection) return;
    this.#live?.connections.delete(streamId);
    this.#tidy();
    clearTimeout(connection.timer);
    const { res } = connection;
    if (res.writableEnded) return;
    res.end(connection.opened ? undefined : this.#open(connection));
  }

  /** The client went away: the stream is forgotten unless a resume has replaced it already. */
  #disconnected(streamId: StreamId, connection: Connection): void {
    clearTimeout(connection.timer);
    if (this.#live?.connections.get(streamId) === connection) this.#live.connections.delete(streamId);
    this.#tidy();
  }

  #sessionValid(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.#options.sessionIdGenerator === undefined) return true;
    if (!this.#initialised) {
      this.#refuse(res, 400, -32000, 'Bad Request: Server not initialized');
      return false;
    }
    const sessionId = req.headers['mcp-session-id'];
    if (!sessionId) {
      this.#refuse(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return false;
    }
    if (sessionId !== this.sessionId) {
      this.#refuse(res, 404, -32001, 'Session not found');
      return false;
    }
    return true;
  }

  #versionValid(req: IncomingMessage, res: ServerResponse): boolean {
    const version = req.headers['mcp-protocol-version'];
    if (version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version as string)) return true;
    const supported = SUPPORTED_PROTOCOL_VERSIONS.join(', ');
    this.#refuse(
      res,
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${String(version)} (supported versions: ${supported})`,
    );
    return false;
  }

  /** DNS-rebinding protection, when enabled: the Host and Origin must be ones the server was told to expect. */
  #hostsAllowed(req: IncomingMessage, res: ServerResponse): boolean {
    const options = this.#options;
    if (!options.enableDnsRebindingProtection) return true;
    const host = req.headers.host;
    if (options.allowedHosts?.length && (!host || !options.allowedHosts.includes(host))) {
      this.#refuse(res, 403, -32000, `Invalid Host header: ${host}`);
      return false;
    }
    const origin = req.headers.origin;
    if (options.allowedOrigins?.length && origin && !options.allowedOrigins.includes(origin)) {
      this.#refuse(res, 403, -32000, `Invalid Origin header: ${origin}`);
      return false;
    }
    return true;
  }

  #fail(message: string): void {
    this.onerror?.(new Error(message));
  }

  /** A refusal the server's error handler hears of, answered as a JSON-RPC error without an id. */
  #refuse(res: ServerResponse, status: number, code: number, message: string): void {
    this.#fail(message);
    this.#error(res, status, code, message);
  }

  #error(
    res: ServerResponse,
    status: number,
    code: number,
    message: string,
    extra: { data?: unknown; allow?: string } = {},
  ): void {
    const error = { code, message, ...(extra.data !== undefined && { data: extra.data }) };
    const body = JSON.stringify({ jsonrpc: '2.0', error, id: null });
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...(extra.allow && { allow: extra.allow }),
    });
    res.end(body);
  }

  #respondJson(res: ServerResponse, body: unknown): void {
    if (res.writableEnded || res.destroyed) return;
    const text = JSON.stringify(body);
    const headers: OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    };
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId;
    res.writeHead(200, headers);
    res.end(text);
  }
}

const versionOf = (req: IncomingMessage): string => {
  const header = req.headers['mcp-protocol-version'];
  return typeof header === 'string' ? header : DEFAULT_NEGOTIATED_PROTOCOL_VERSION;
};

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

const TOO_LARGE = Symbol('too large');

/** The request's body as text, or TOO_LARGE past the SDK's limit (checked on the declared length first). */
async function readBody(req: IncomingMessage): Promise<string | typeof TOO_LARGE> {
  if (Number(req.headers['content-length']) > MAX_BODY_BYTES) return TOO_LARGE;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return TOO_LARGE;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
