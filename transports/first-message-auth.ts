import type { WebSocket } from 'ws';
import { UnauthorizedError, toAppError } from '../src/errors.js';
import type { Logger } from '../src/logger.js';
import { type Caller, CallerErrorCode, userIdOf } from '../src/ports/caller.js';

/** Close codes of a socket refused after the upgrade, mirroring HTTP statuses. */
export const CLOSE_CODES = { unauthenticated: 4401, forbidden: 4403, rateLimited: 4429, internalError: 1011 } as const;

/** How many messages a client may send behind its auth message before its token is checked. */
const MAX_EARLY_MESSAGES = 32;
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

export function closeCodeFor(status: number): number {
  if (status === 401) return CLOSE_CODES.unauthenticated;
  if (status === 403) return CLOSE_CODES.forbidden;
  if (status === 429) return CLOSE_CODES.rateLimited;
  return CLOSE_CODES.internalError;
}

/** The token of a message `{"type":"auth","token":"…"}`, if that is what it is. */
export function authTokenOf(data: Buffer): string | undefined {
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof message !== 'object' || message === null) return undefined;
  const { type, token } = message as Record<string, unknown>;
  return type === 'auth' && typeof token === 'string' && TOKEN.test(token) ? token : undefined;
}

export interface FirstMessageAuth {
  ws: WebSocket;
  /** The sockets still waiting for their auth message (this one joins until it settles). */
  pending: Set<WebSocket>;
  requestId: string;
  /** The socket's path, for the log. */
  url: string;
  logger: Logger;
  timeoutMs: number;
  /** The most bytes a client may send behind its auth message before it is known. */
  maxEarlyBytes: number;
  /** The caller the token stands for; throws (401) when it stands for none. */
  authenticate: (token: string) => Promise<Caller>;
  /**
   * Takes the authenticated caller on, or refuses them by throwing (answered `auth_error` and closed with the
   * status's close code). Returns how to serve the socket, given the messages sent behind the auth message; or
   * nothing when it closed the socket itself.
   */
  accept: (caller: Caller) => Promise<((early: Buffer[]) => void) | undefined>;
}

/**
 * First-message authentication of a WebSocket (browsers cannot set headers on one): the first message must be
 * `{"type":"auth","token":"…"}`, answered `{"type":"auth_success","user_id"}`. Anything else, a bad token or
 * silence beyond the timeout is answered `{"type":"auth_error","message"}` and the socket closed (4401, or the
 * close code of the refusal's status). Messages sent while the token is checked are kept for the served socket; a
 * client that floods before it is known is closed with 1008.
 */
export function awaitAuthMessage(options: FirstMessageAuth): void {
  const { ws, pending, requestId, logger } = options;
  pending.add(ws);
  const early: Buffer[] = [];
  let earlyBytes = 0;
  let received = false;
  const settle = () => {
    clearTimeout(timer);
    pending.delete(ws);
    ws.off('message', onMessage);
  };
  const refuse = (thrown: unknown) => {
    settle();
    const error = toAppError(thrown);
    const message = error.expose ? error.message : 'Internal server error';
    if (error.status >= 500)
      logger.error({ req: { id: requestId }, err: error.cause ?? error }, 'websocket auth failed');
    else
      logger.warn(
        { req: { id: requestId }, url: options.url, status: error.status },
        `websocket auth refused: ${message}`,
      );
    if (ws.readyState !== ws.OPEN) return;
    ws.send(JSON.stringify({ type: 'auth_error', message }));
    ws.close(closeCodeFor(error.status), message.slice(0, 120));
  };
  const timer = setTimeout(
    () => refuse(new UnauthorizedError('No auth message received in time', { code: CallerErrorCode.InvalidToken })),
    options.timeoutMs,
  );
  timer.unref();
  const onMessage = (data: Buffer) => {
    if (received) {
      early.push(data);
      earlyBytes += data.length;
      // A client may pipeline a few messages behind its auth message, not flood the server before it is known.
      if (early.length > MAX_EARLY_MESSAGES || earlyBytes > options.maxEarlyBytes) {
        settle();
        ws.close(1008, 'too many messages before authentication');
      }
      return;
    }
    received = true;
    const token = authTokenOf(data);
    if (token === undefined)
      return refuse(
        new UnauthorizedError('The first message must be {"type":"auth","token":"<access token>"}', {
          code: CallerErrorCode.InvalidToken,
        }),
      );
    void options
      .authenticate(token)
      .then(async (caller) => {
        if (ws.readyState !== ws.OPEN) return settle();
        const serve = await options.accept(caller);
        settle();
        if (!serve || ws.readyState !== ws.OPEN) return;
        ws.send(JSON.stringify({ type: 'auth_success', user_id: userIdOf(caller) ?? caller.subject }));
        serve(early);
      })
      .catch(refuse);
  };
  ws.on('message', onMessage);
  ws.once('close', settle);
}
