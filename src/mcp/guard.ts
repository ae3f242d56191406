import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { RateLimitError } from '../errors.js';
import type { Caller } from '../ports/caller.js';
import type { McpMetrics } from './metrics.js';
import type { McpPolicy } from './policy.js';

/** JSON-RPC error code for a request refused by the rate limit (implementation-defined server error range). */
export const RATE_LIMITED = -32029;

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
export function guardTransport(transport: Transport, options: GuardOptions): void {
  const methods = new Map<string | number, string>();
  const deliver = transport.onmessage;
  const send = transport.send.bind(transport);

  transport.send = async (message: JSONRPCMessage, sendOptions?: Parameters<Transport['send']>[1]) => {
    if ('id' in message && message.id !== undefined && ('result' in message || 'error' in message)) {
      const method = methods.get(message.id);
      if (method !== undefined) {
        methods.delete(message.id);
        options.metrics.messages.inc({ method, status: 'error' in message ? 'error' : 'success' });
      }
    }
    return send(message, sendOptions);
  };

  transport.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
    if (!('method' in message) || !('id' in message)) {
      deliver?.(message, extra);
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
}
