import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import { eventText, flattenHead } from './stream-text.js';

/**
 * One stream of the deprecated HTTP+SSE transport as an MCP `Transport`: the server's messages go out as `message`
 * events on the open `GET /sse` answer, and the client's come in through `deliver` from `POST /messages`, whose
 * route has parsed and checked them. It speaks what the SDK's `SSEServerTransport` speaks (the same head, the
 * `endpoint` event with the session id, one event per message), but the stream is opened by `open`, not by
 * `start`: a stream can be open, and stay open, before any server is connected to it.
 */
export class LegacySseTransport implements Transport {
  readonly sessionId = randomUUID();
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  #closed = false;

  constructor(private readonly res: ServerResponse) {
    res.once('close', () => this.#end());
  }

  /** Sends the head and the `endpoint` event: where the client posts its messages, with this stream's id. */
  open(endpoint: string): void {
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
    });
    this.res.write(`event: endpoint\ndata: ${endpoint}?sessionId=${this.sessionId}\n\n`);
    flattenHead(this.res);
  }

  /** Writes one event of the stream's own (not an MCP message), unless the client has gone. */
  event(type: string, data: unknown): void {
    if (!this.#closed) this.res.write(eventText(type, data));
  }

  /** The stream was opened by `open`; connecting a server starts nothing more. */
  async start(): Promise<void> {}

  /** Hands the server a message the client posted. */
  deliver(message: JSONRPCMessage, extra: MessageExtraInfo): void {
    this.onmessage?.(message, extra);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('Not connected'));
    this.res.write(eventText('message', message));
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.res.end();
    this.#end();
    return Promise.resolve();
  }

  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
