import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Request, Response } from 'express';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  type AppError,
  BadRequestError,
  CommonErrorCode,
  ForbiddenError,
  ServiceUnavailableError,
  UnauthorizedError,
  toAppError,
} from '../src/errors.js';
import type { CallerResolver } from '../src/http/authenticate.js';
import { callerOf } from '../src/http/authenticate.js';
import { type RouteGroup, defineRoute } from '../src/http/route.js';
import { type Lifecycle, isServiceStopping } from '../src/lifecycle.js';
import type { Logger } from '../src/logger.js';
import type { McpMetrics } from '../src/mcp/metrics.js';
import type { McpPolicy } from '../src/mcp/policy.js';
import {
  type AdmittedTurn,
  ChatRequest,
  ChatResponse,
  type PlaygroundEvent,
  type PlaygroundService,
} from '../src/modules/playground/index.js';
import { type Caller, CallerErrorCode } from '../src/ports/caller.js';
import { openEventStream } from './event-stream.js';
import { type StreamSlot, openStreamSlot } from './stream-slot.js';
import { awaitAuthMessage } from './first-message-auth.js';
import { checkHandshake, refuseUpgrade, requestIdOf } from './websocket.js';

/** The playground socket of one session: `/ws/playground/{session_id}`. */
const SOCKET_PATH = /^\/ws\/playground\/([A-Za-z0-9._~-]{1,64})$/;
/** An access token (three base64url parts); any other credential in an auth message is a session id. */
const JWT = /^[^.]+\.[^.]+\.[^.]+$/;
const MAX_PENDING_AUTH = 256;
/** Close code of a socket whose session is missing or someone else's (mirrors HTTP 404). */
const CLOSE_NOT_FOUND = 4404;

export interface PlaygroundWireDeps {
  playground: PlaygroundService;
  /** Turns take one of the caller's concurrent streams; connections are counted by wire. */
  policy: Pick<McpPolicy, 'openStream'>;
  metrics: Pick<McpMetrics, 'connections'>;
  lifecycle: Lifecycle;
  logger: Logger;
  resolveCaller: CallerResolver;
  originAllowed: (origin: string | undefined) => boolean;
  /** The longest chat message (characters): a frame much larger is refused with an `error`, the socket kept. */
  maxMessageChars: number;
  authTimeoutMs: number;
  heartbeatMs: number;
}

/** Whether an error event is worth an error log line: a failure of the service, not its stopping. */
function failedHere(error: AppError): boolean {
  return error.status >= 500 && !isServiceStopping(error);
}

/** What a playground event looks like on a wire: its type, and its fields (an error by its message and code). */
function wireEvent(event: PlaygroundEvent): { type: string } & Record<string, unknown> {
  if (event.type !== 'error') return event;
  return { type: 'error', ...errorFields(event.error), message_id: event.message_id };
}

function errorFields(error: AppError): { message: string; code: string } {
  return { message: error.expose ? error.message : 'Internal error', code: error.code };
}

/** `POST /api/playground/chat`: one turn, answered as the Chat response or streamed as server-sent events. */
export function playgroundChatRoutes(deps: PlaygroundWireDeps): RouteGroup {
  const { playground } = deps;
  return {
    prefix: '/api/playground',
    area: 'envelope',
    tags: ['Playground'],
    routes: [
      defineRoute({
        method: 'post',
        path: '/chat',
        operationId: 'playgroundChat',
        summary: 'Send a message in a session',
        description:
          'Runs one agent turn with the tools you may use. With stream true (and Accept: text/event-stream), ' +
          'server-sent events: token…, tool_call / tool_result, then end (or error). Leaving the stream stops the ' +
          'turn; the partial answer is kept, marked cancelled.',
        request: { body: ChatRequest },
        responses: {
          200: { description: 'The answer, or a stream of events', schema: ChatResponse },
          403: { description: 'Not permitted to chat' },
          404: { description: 'No such session of yours' },
          409: { description: 'A turn is already running in this session' },
          429: { description: 'Rate limit or concurrent-turn limit exceeded' },
        },
        handler: async ({ body, req, res }) => {
          const admitted = await playground.admit(callerOf(req), body.session_id, body.message);
          if (body.stream) {
            await streamTurn(deps, req, res, admitted);
            return undefined;
          }
          const gone = new AbortController();
          res.once('close', () => gone.abort());
          return playground.complete(admitted, gone.signal);
        },
      }),
    ],
  };
}

async function streamTurn(
  deps: PlaygroundWireDeps,
  req: Request,
  res: Response,
  admitted: AdmittedTurn,
): Promise<void> {
  const slot = openStreamSlot(deps, admitted.caller, { server: 'playground', endsWith: res, shutdown: 'finish' });
  const stream = openEventStream(res);
  try {
    for await (const event of deps.playground.turn(admitted, slot.signal)) {
      const { type, ...data } = wireEvent(event);
      stream.send(type, data);
      if (event.type === 'error' && failedHere(event.error))
        req.log.error({ err: event.error.cause ?? event.error }, 'playground stream failed');
    }
  } finally {
    slot.release();
    stream.end();
  }
}

/**
 * The playground WebSocket `/ws/playground/{session_id}` (spec "Events"). The first message authenticates:
 * `{type: "auth", token}` → `auth_success {user_id}`, or `auth_error {message}` and close; so does silence beyond
 * the timeout. Then `chat {message}` streams `token` / `tool_call` / `tool_result` / `end`, `cancel` stops the
 * running turn (the model and its tools), `ping` is answered `pong`. A bad message is answered `error` and the
 * socket stays open. The server pings every socket and closes those that stop answering, and closes all of them
 * when the service stops: an idle one at once, one running a turn once the turn has sent its last event (`end`, or
 * the service-stopping `error` at the shutdown's deadline).
 */
export class PlaygroundSocketEndpoint {
  readonly #wss: WebSocketServer;
  readonly #pending = new Set<WebSocket>();
  readonly #alive = new WeakSet<WebSocket>();
  /** The turn each socket runs, settled once its last event is sent. */
  readonly #turns = new WeakMap<WebSocket, Promise<void>>();

  constructor(private readonly deps: PlaygroundWireDeps) {
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: this.#maxFrameBytes * 4 });
    this.#wss.on('connection', (socket: WebSocket) => {
      this.#alive.add(socket);
      socket.on('pong', () => this.#alive.add(socket));
    });
    deps.lifecycle.onStop(() => {
      for (const socket of this.#pending) socket.close(1001, 'server shutting down');
    });
  }

  /** Room for the longest message in JSON (every character escaped), and the envelope around it. */
  get #maxFrameBytes(): number {
    return this.deps.maxMessageChars * 6 + 1024;
  }

  /** Takes the upgrade if it is for a playground socket; returns false otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (!path.startsWith('/ws/playground/')) return false;
    this.#accept(req, socket, head, SOCKET_PATH.exec(path)?.[1]);
    return true;
  }

  #accept(req: IncomingMessage, socket: Duplex, head: Buffer, sessionId: string | undefined): void {
    const requestId = requestIdOf(req);
    const onError = () => socket.destroy();
    socket.on('error', onError);
    try {
      if (this.deps.lifecycle.phase !== 'running')
        throw new ServiceUnavailableError('The service is not running', {
          code: CommonErrorCode.ServiceUnavailable,
          headers: { 'Retry-After': '1' },
        });
      checkHandshake(req);
      if (!this.deps.originAllowed(req.headers.origin))
        throw new ForbiddenError('Origin not allowed', { code: CommonErrorCode.Forbidden });
      if (sessionId === undefined)
        throw new BadRequestError('The socket path is /ws/playground/{session_id}', {
          code: CommonErrorCode.BadRequest,
        });
      if (this.#pending.size >= MAX_PENDING_AUTH)
        throw new ServiceUnavailableError('Too many connections awaiting authentication; retry shortly', {
          code: CommonErrorCode.ServiceUnavailable,
          headers: { 'Retry-After': '1' },
        });
      socket.off('error', onError);
      this.#wss.handleUpgrade(req, socket, head, (ws) => {
        this.#wss.emit('connection', ws, req);
        this.#awaitAuth(ws, sessionId, requestId, req.headers.cookie);
      });
    } catch (thrown) {
      refuseUpgrade(socket, thrown, {
        area: 'envelope',
        url: '/ws/playground',
        requestId,
        logger: this.deps.logger,
      });
    }
  }

  #awaitAuth(ws: WebSocket, sessionId: string, requestId: string, cookie: string | undefined): void {
    awaitAuthMessage({
      ws,
      pending: this.#pending,
      requestId,
      url: '/ws/playground',
      logger: this.deps.logger,
      timeoutMs: this.deps.authTimeoutMs,
      maxEarlyBytes: this.#maxFrameBytes * 8,
      authenticate: (token) => this.#callerOf(token, cookie),
      accept: async (caller) => {
        try {
          await this.deps.playground.session(caller, sessionId);
        } catch (thrown) {
          const error = toAppError(thrown);
          if (error.status !== 404) throw error;
          // The session is missing or someone else's: said as an error, as on every other playground route.
          ws.send(JSON.stringify({ type: 'error', ...errorFields(error) }));
          ws.close(CLOSE_NOT_FOUND, 'session not found');
          return undefined;
        }
        const slot = openStreamSlot(this.deps, caller, {
          server: 'playground',
          limited: false,
          endsWith: ws,
          onStop: () => this.#closeAfterTurn(ws),
          heartbeat: { intervalMs: this.deps.heartbeatMs, beat: () => this.#beat(ws) },
        });
        return (early) => this.#serve(ws, caller, sessionId, slot, early);
      },
    });
  }

  /**
   * The caller of an auth message's token: an access token; or in session mode the session id the login answered
   * with, which must be the session of the cookie the browser sent with the upgrade (the id alone is no secret).
   */
  async #callerOf(token: string, cookie: string | undefined): Promise<Caller> {
    if (JWT.test(token)) return this.deps.resolveCaller({ authorization: `Bearer ${token}` });
    const refused = new UnauthorizedError('The session id must come with its session cookie', {
      code: CallerErrorCode.InvalidToken,
    });
    if (!cookie) throw refused;
    const caller = await this.deps.resolveCaller({ cookie });
    if (caller.sessionId !== token) throw refused;
    return caller;
  }

  /** Closes a socket as the service stops: at once, or once the turn it runs has sent its last event. */
  #closeAfterTurn(ws: WebSocket): void {
    const close = () => ws.close(1001, 'server shutting down');
    const turn = this.#turns.get(ws);
    if (turn) void turn.then(close);
    else close();
  }

  #beat(ws: WebSocket): void {
    if (!this.#alive.has(ws)) return ws.terminate();
    this.#alive.delete(ws);
    ws.ping();
  }

  #serve(ws: WebSocket, caller: Caller, sessionId: string, slot: StreamSlot, early: Buffer[]): void {
    const send = (message: Record<string, unknown>) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
    };
    const sendError = (error: AppError) => send({ type: 'error', ...errorFields(error) });
    let running: AbortController | undefined;

    const chat = async (message: string) => {
      const { playground } = this.deps;
      let turnSlot: StreamSlot | undefined;
      const controller = new AbortController();
      running = controller;
      try {
        const admitted = await playground.admit(caller, sessionId, message);
        const held = openStreamSlot(this.deps, caller, { server: 'playground', limited: true, shutdown: 'finish' });
        turnSlot = held;
        held.signal.addEventListener('abort', () => controller.abort(), { once: true });
        for await (const event of playground.turn(admitted, controller.signal)) {
          if (event.type === 'error' && failedHere(event.error))
            this.deps.logger.error({ err: event.error.cause ?? event.error }, 'playground turn failed');
          send(wireEvent(event));
        }
      } catch (thrown) {
        sendError(toAppError(thrown));
      } finally {
        turnSlot?.release();
        if (running === controller) running = undefined;
      }
    };

    const handle = (data: Buffer) => {
      if (data.length > this.#maxFrameBytes)
        return sendError(
          new BadRequestError(`Message too large: at most ${this.deps.maxMessageChars} characters`, {
            code: CommonErrorCode.PayloadTooLarge,
          }),
        );
      let message: unknown;
      try {
        message = JSON.parse(data.toString('utf8'));
      } catch {
        return sendError(new BadRequestError('Message is not valid JSON', { code: CommonErrorCode.MalformedJson }));
      }
      const { type, message: text } = (typeof message === 'object' && message !== null ? message : {}) as Record<
        string,
        unknown
      >;
      switch (type) {
        case 'ping':
          return send({ type: 'pong' });
        case 'cancel':
          if (running) running.abort();
          else sendError(new BadRequestError('No turn is running', { code: CommonErrorCode.BadRequest }));
          return;
        case 'chat':
          if (typeof text !== 'string' || text.trim() === '')
            return sendError(
              new BadRequestError('A chat message needs a non-empty "message"', { code: CommonErrorCode.Validation }),
            );
          if (running)
            return sendError(
              new BadRequestError('A turn is already running; cancel it or wait for its end', {
                code: CommonErrorCode.Conflict,
              }),
            );
          this.#turns.set(ws, chat(text));
          return;
        case 'auth':
          return sendError(new BadRequestError('Already authenticated', { code: CommonErrorCode.BadRequest }));
        default:
          return sendError(
            new BadRequestError(`Unknown message type: use chat, cancel or ping`, { code: CommonErrorCode.BadRequest }),
          );
      }
    };

    // A socket outlives no credential: it closes when the token it was opened with expires.
    const expiry =
      caller.expiresAt !== undefined
        ? setTimeout(() => ws.close(1008, 'credentials expired'), Math.max(0, caller.expiresAt * 1000 - Date.now()))
        : undefined;
    expiry?.unref();
    ws.on('message', handle);
    ws.once('close', () => {
      clearTimeout(expiry);
      running?.abort();
      slot.release();
    });
    for (const data of early) handle(data);
  }
}
