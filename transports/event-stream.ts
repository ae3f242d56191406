import type { Response } from 'express';
import { eventText, flattenHead } from './stream-text.js';

/** A server-sent events response: its events are written as they come, until it is ended. */
export interface EventStream {
  /** Writes one event (`event: <type>` and its data as JSON), unless the client has gone. */
  send(type: string, data: unknown): void;
  end(): void;
}

/**
 * Starts a `text/event-stream` answer: status 200, no caching or proxy buffering. The headers leave with the first
 * event, or on their own once the work that follows the stream's opening has had its turn of the event loop (a chat
 * turn's request to its model): whichever comes first, so that the client knows at once that its stream is open,
 * without a write of its own standing between the request and what it asked for.
 */
export function openEventStream(res: Response): EventStream {
  // Node's own setters: express's `set` looks the content type up in its MIME table on every call.
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  setImmediate(() => {
    if (res.headersSent || res.writableEnded) return;
    res.flushHeaders();
    flattenHead(res);
  });
  return {
    send(type, data) {
      if (res.writableEnded) return;
      const first = !res.headersSent;
      const socket = res.socket;
      const corked = socket?.writableCorked ?? 0;
      res.write(eventText(type, data));
      if (first) flattenHead(res);
      // Node corks the socket on a write and uncorks it only on the next tick, which comes once the turn's
      // pending promise work has run (the rest of a buffered model answer, database writes): undone here, so
      // each event leaves when it is written rather than when the process next comes up for air.
      if (socket && socket.writableCorked > corked) socket.uncork();
    },
    end: () => res.end(),
  };
}
