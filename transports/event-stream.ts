import type { Response } from 'express';

/** A server-sent events response: its events are written as they come, until it is ended. */
export interface EventStream {
  /** Writes one event (`event: <type>` and its data as JSON), unless the client has gone. */
  send(type: string, data: unknown): void;
  end(): void;
}

/** Starts a `text/event-stream` answer: status 200, no caching or proxy buffering, headers sent at once. */
export function openEventStream(res: Response): EventStream {
  res.status(200).set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  return {
    send(type, data) {
      if (!res.writableEnded) res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end: () => res.end(),
  };
}
