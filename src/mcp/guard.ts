import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { RateLimitError } from '../errors.js';
import type { Caller } from '../ports/caller.js';
import type { McpMetrics } from './metrics.js';
import type { McpPolicy } from './policy.js';

/** JSON-RPC error code for a request refused by the rate limit (implementation-defined server error range). */
export const RATE_LIMITED = -32029;
/** JSON-RPC error code for a request refused, or left unanswered at the drain's deadline, as the service stops. */
export const SERVICE_STOPPING = -32030;

const STOPPING_MESSAGE = 'The service is stopping; send the request again to reach another instance';

/** What the guard of one connection does at shutdown. */
export interface TransportGuard {
  /**
   * Lets the requests in flight on the connection finish, refusing new ones with the stopping error; resolves once
   * every one is answered. Those still unanswered when `deadline` aborts are answered with the stopping error then.
   * Close the connection after it: a client never loses an answer to a bare close.
   */
  settle(deadline: AbortSignal): Promise<void>;
}

export interface GuardOptions {
  policy: McpPolicy;
  metrics: McpMetrics;
  /** Who sent a message: its AuthInfo's caller, else the connection's. */
  fallbackCaller?: Caller;
  /** Count requests against the caller's budget here; off where the HTTP layer already did (one per POST). */
  rateLimit: boolean;
}

/**
 * Puts the policy point and the metrics on a connected JSON-RPC transport: every request is counted (and refused
 * with a JSON-RPC error beyond the caller's budget), and every response is recorded by method and outcome. It wraps
 * the handlers the server installed, so it must be called after `server.connect(transport)`.
 */
export function guardTransport(transport: Transport, options: GuardOptions): TransportGuard {
  /** The requests in flight: delivered to the server, not yet answered. */
  const methods = new Map<string | number, string>();
  const deliver = transport.onmessage;
  const send = transport.send.bind(transport);
  let stopping = false;
  const whenIdle: (() => void)[] = [];
  const stopped = (id: string | number, method: string) => {
    options.metrics.messages.inc({ method, status: 'error' });
    return send({ jsonrpc: '2.0', id, error: { code: SERVICE_STOPPING, message: STOPPING_MESSAGE } });
  };

  transport.send = async (message: JSONRPCMessage, sendOptions?: Parameters<Transport['send']>[1]) => {
    if ('id' in message && message.id !== undefined && ('result' in message || 'error' in message)) {
      const method = methods.get(message.id);
      if (method !== undefined) {
        methods.delete(message.id);
        options.metrics.messages.inc({ method, status: 'error' in message ? 'error' : 'success' });
        if (methods.size === 0) for (const idle of whenIdle.splice(0)) idle();
      } else if (stopping) {
        return; // answered with the stopping error at the deadline already
      }
    }
    return send(message, sendOptions);
  };

  transport.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
    if (!('method' in message) || !('id' in message)) {
      deliver?.(message, extra);
      return;
    }
    if (stopping) {
      void stopped(message.id, message.method).catch(() => undefined);
      return;
    }
    const caller = (extra?.authInfo?.extra?.caller as Caller | undefined) ?? options.fallbackCaller;
    if (!options.rateLimit || !caller) {
      methods.set(message.id, message.method);
      deliver?.(message, extra);
      return;
    }
    options.policy.admitRequest(caller).then(
      () => {
        methods.set(message.id, message.method);
        deliver?.(message, extra);
      },
      (error: unknown) => {
        options.metrics.messages.inc({ method: message.method, status: 'rate_limited' });
        const retryAfter = error instanceof RateLimitError ? error.retryAfterSeconds : 1;
        void send({
          jsonrpc: '2.0',
          id: message.id,
          error: {
            code: RATE_LIMITED,
            message: error instanceof Error ? error.message : 'Rate limit exceeded',
            data: { retry_after: retryAfter },
          },
        });
      },
    );
  };

  return {
    settle(deadline) {
      stopping = true;
      if (methods.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const atDeadline = () => {
          const unanswered = [...methods];
          methods.clear();
          void Promise.all(unanswered.map(([id, method]) => stopped(id, method).catch(() => undefined))).then(() =>
            resolve(),
          );
        };
        whenIdle.push(() => {
          deadline.removeEventListener('abort', atDeadline);
          resolve();
        });
        if (deadline.aborted) atDeadline();
        else deadline.addEventListener('abort', atDeadline, { once: true });
      });
    },
  };
}
