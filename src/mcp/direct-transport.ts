import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC error answered by the server, kept with its code for the caller to map. */
export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

/**
 * An in-process transport: each request is handed to the connected server with its caller's AuthInfo, and the
 * response with the same id resolves the promise. It lets one long-lived server answer the REST-style endpoints
 * for every caller without a socket or a session.
 */
export class DirectTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: { authInfo?: AuthInfo }) => void;
  readonly #pending = new Map<string, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #next = 0;

  start(): Promise<void> {
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && ('result' in message || 'error' in message)) {
      const pending = this.#pending.get(String(message.id));
      if (pending) {
        this.#pending.delete(String(message.id));
        if ('error' in message)
          pending.reject(new JsonRpcError(message.error.code, message.error.message, message.error.data));
        else pending.resolve(message.result);
      }
    }
    // Notifications (log messages, list changes) have no one to go to here.
    return Promise.resolve();
  }

  close(): Promise<void> {
    for (const { reject } of this.#pending.values()) reject(new Error('transport closed'));
    this.#pending.clear();
    this.onclose?.();
    return Promise.resolve();
  }

  /** Sends one request to the server as `authInfo`'s caller and waits for its answer. */
  request(method: string, params: Record<string, unknown> | undefined, authInfo: AuthInfo): Promise<unknown> {
    if (!this.onmessage) return Promise.reject(new Error('transport not connected'));
    const id = `direct-${++this.#next}`;
    const answered = new Promise<unknown>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.onmessage({ jsonrpc: '2.0', id, method, ...(params && { params }) }, { authInfo });
    return answered;
  }
}
