import type { IncomingMessage, RequestListener } from 'node:http';

/**
 * How long request handling may run in one phase of an event-loop turn before the rest waits for the next turn.
 * Node's libuv (1.45 and later) accepts one new connection per turn, and a saturated turn runs the request of every
 * connection that sent one: as long as the connections times the work per request. Clients that connect together
 * to a busy server (a pool opening its connections, a benchmark's 50) are then let in one turn at a time, and the
 * last one's first request waits the sum of all those turns: seconds, where every other request waits tens of
 * milliseconds. Bounding each phase lets the loop come round, and accept, every few milliseconds however many
 * connections there are.
 */
const TURN_BUDGET_MS = 2;

const ARRIVED = Symbol('arrived');
type Waiting = IncomingMessage & { [ARRIVED]?: number };

/** When a request arrived, if it waited for a later turn (`performance.now()` time); else undefined. */
export function arrivalOf(req: IncomingMessage): number | undefined {
  return (req as Waiting)[ARRIVED];
}

/**
 * Runs a request listener at most `budgetMs` in each phase of a turn of the event loop. A request that arrives once
 * the phase's budget is spent, or while earlier ones wait, is queued and run in arrival order from immediates: each
 * of those runs one request and its promise continuations, and once the check phase has spent its budget the rest
 * move to the next turn, after the loop has polled again (accepted a connection, read what the sockets brought). A
 * request that finds its phase within budget and nobody waiting runs at once, as every request of a server that is
 * not saturated does.
 */
export function boundedTurns(listener: RequestListener, budgetMs = TURN_BUDGET_MS): RequestListener {
  const waiting: (() => void)[] = [];
  /** Immediates that will run a waiting request (or find the budget spent). */
  let scheduled = 0;
  /** When the current phase began handling requests; undefined once the loop has come round. */
  let phaseStarted: number | undefined;
  const endPhase = () => {
    phaseStarted = undefined;
  };
  /** Whether the phase may run another request; the first request of a phase starts its clock. */
  const withinBudget = (now: number): boolean => {
    if (phaseStarted === undefined) {
      phaseStarted = now;
      // From the poll phase this runs first in the check phase that follows; from the check phase, first in the
      // next turn's: either way the phase that follows starts afresh.
      setImmediate(endPhase);
    }
    return now - phaseStarted < budgetMs;
  };
  // Each request runs from an immediate of its own, so that its promise continuations have run before the clock is
  // read again. An immediate scheduled from the check phase runs in the next turn's, after that turn's poll.
  const runNext = () => {
    scheduled -= 1;
    try {
      if (withinBudget(performance.now())) waiting.shift()?.();
    } finally {
      // The last immediate of the phase hands what is left to the next turn.
      if (scheduled === 0 && waiting.length > 0) schedule();
    }
  };
  const schedule = () => {
    scheduled += 1;
    setImmediate(runNext);
  };

  return (req, res) => {
    const now = performance.now();
    if (withinBudget(now) && waiting.length === 0) {
      listener(req, res);
      return;
    }
    (req as Waiting)[ARRIVED] = now;
    waiting.push(() => listener(req, res));
    if (scheduled < waiting.length) schedule();
  };
}
