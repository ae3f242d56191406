import type { EventEmitter } from 'node:events';
import type { Lifecycle } from '../src/lifecycle.js';
import type { McpMetrics } from '../src/mcp/metrics.js';
import type { McpPolicy } from '../src/mcp/policy.js';
import type { Caller } from '../src/ports/caller.js';

/** The wires, as the connections gauge labels them. */
export type StreamServer = 'rest' | 'sse' | 'streamable_http' | 'websocket' | 'stdio' | 'playground' | 'builder';

export interface StreamSlotDeps {
  policy: Pick<McpPolicy, 'openStream'>;
  metrics: Pick<McpMetrics, 'connections'>;
  lifecycle: Pick<Lifecycle, 'onStop'>;
}

export interface StreamSlotOptions {
  server: StreamServer;
  /** Whether the stream takes one of the caller's concurrent streams (the default); stdio's one client does not. */
  limited?: boolean;
  /** The client's end of the stream (a response, a socket): when it closes, the slot is released. */
  endsWith?: Pick<EventEmitter, 'once' | 'off'>;
  /**
   * What the service's shutdown does to the stream. `close` (the default), for a stream that only waits for events:
   * when shutdown begins, `signal` aborts and `onStop` runs. `finish`, for a stream that carries a chat turn: the
   * slot leaves it running, for the chat-turn service decides whether the turn finishes within the drain or stops
   * at the shutdown's deadline with its final error event; the wire renders whichever comes.
   */
  shutdown?: 'close' | 'finish';
  /** Winds the stream down when the service begins to stop (close the socket, end the response). */
  onStop?: () => void;
  /** Runs once when the slot is released, after the bookkeeping: the wire's own cleanup. */
  onRelease?: () => void;
  /** Keeps the stream alive (and finds dead peers): `beat` runs every `intervalMs` while the slot is held. */
  heartbeat?: { intervalMs: number; beat: () => void };
}

/** An open stream's hold on the caller's stream budget, the connections gauge and the shutdown hooks. */
export interface StreamSlot {
  /**
   * Aborted when the stream should end: the client went away, it was released, or (unless it is to `finish`) the
   * service begins to stop.
   */
  readonly signal: AbortSignal;
  /** Gives everything back, exactly once however often it is called. */
  release(): void;
}

/**
 * Opens one stream for the caller on any wire: reserves one of its concurrent streams (throwing the policy's 429
 * beyond the limit, before anything else is taken), counts the connection by wire, hooks the stream to shutdown
 * and to its client's going away, and runs its heartbeat. `release()` undoes all of it once.
 */
export function openStreamSlot(deps: StreamSlotDeps, caller: Caller, options: StreamSlotOptions): StreamSlot {
  const releaseStream = options.limited === false ? () => undefined : deps.policy.openStream(caller);
  const labels = { server: options.server };
  deps.metrics.connections.inc(labels);
  // Made when first asked for: a stream that never reads it (legacy SSE) holds no controller, whose signal is an
  // event target with maps of its own and, in Node, a hidden class of its own.
  let controller: AbortController | undefined;
  let ended = false;
  const end = () => {
    ended = true;
    controller?.abort();
  };
  const stopListening =
    options.shutdown === 'finish'
      ? () => undefined
      : deps.lifecycle.onStop(() => {
          end();
          options.onStop?.();
        });
  const heartbeat = options.heartbeat && setInterval(options.heartbeat.beat, options.heartbeat.intervalMs).unref();
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    releaseStream();
    deps.metrics.connections.dec(labels);
    stopListening();
    clearInterval(heartbeat);
    options.endsWith?.off('close', release);
    end();
    options.onRelease?.();
  };
  options.endsWith?.once('close', release);
  return {
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (ended) controller.abort();
      }
      return controller.signal;
    },
    release,
  };
}
