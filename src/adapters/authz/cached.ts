import type { AuthzService, Tuple, TupleFilter } from './port.js';

export interface DecisionCacheOptions {
  /** How long a decision is reused. Bounds how late another instance's tuple change is seen. */
  ttlMs: number;
  /** Most decisions kept; the oldest go first. */
  limit?: number;
  now?: () => number;
  /** Runs a renewal away from the request that prompted it; the next turn of the event loop by default. */
  defer?: (work: () => void) => void;
}

interface Decision {
  allowed: boolean;
  /** When the question was put to the evaluator: the answer is as old as that. */
  asked: number;
  renewing: boolean;
}

/**
 * Reuses `check` decisions for a short while, so an authenticated request does not walk tuples in the database
 * (or ask OpenFGA) for a question it asked a moment ago. A tuple written or deleted through this service clears
 * every decision at once, so on this instance a change takes effect for the next request; on another instance it
 * takes effect within `ttlMs`. A check that was already under way when a change was made answers its caller but is
 * not kept.
 *
 * A decision read in the second half of its life is answered from memory and asked again in the background, and the
 * new answer lives on from when it was asked. Under steady traffic the questions every request puts would otherwise
 * all expire together, once per `ttlMs`, and the request that found them expired walked every one of them on its
 * own path. No answer given is older than `ttlMs`; a question nobody puts for that long is forgotten as before.
 */
export function cachingDecisions(inner: AuthzService, options: DecisionCacheOptions): AuthzService {
  const { ttlMs, limit = 50_000, now = Date.now, defer = setImmediate } = options;
  const decisions = new Map<string, Decision>();
  let generation = 0;
  const changed = () => {
    generation += 1;
    decisions.clear();
  };
  const after = async <T>(work: Promise<T>): Promise<T> => {
    try {
      return await work;
    } finally {
      changed();
    }
  };
  /** Asks the evaluator and keeps the answer, unless a tuple changed meanwhile. */
  const ask = async (key: string, user: string, relation: string, object: string): Promise<boolean> => {
    const started = generation;
    const asked = now();
    const allowed = await inner.check(user, relation, object);
    if (generation === started) {
      decisions.delete(key);
      if (decisions.size >= limit) decisions.delete(decisions.keys().next().value!);
      decisions.set(key, { allowed, asked, renewing: false });
    }
    return allowed;
  };
  const renew = (decision: Decision, askAgain: () => Promise<boolean>) => {
    decision.renewing = true;
    defer(() => {
      // A decision that could not be asked again lives out its time; the next read past it asks on its own path.
      askAgain().catch(() => (decision.renewing = false));
    });
  };

  return {
    provider: inner.provider,
    async check(user, relation, object) {
      const key = `${user}\n${relation}\n${object}`;
      const decision = decisions.get(key);
      if (decision) {
        const age = now() - decision.asked;
        if (age < ttlMs) {
          if (age * 2 >= ttlMs && !decision.renewing) renew(decision, () => ask(key, user, relation, object));
          return decision.allowed;
        }
      }
      return ask(key, user, relation, object);
    },
    write: (tuples: Tuple[]) => after(inner.write(tuples)),
    delete: (tuples: Tuple[]) => after(inner.delete(tuples)),
    removeAllFor: (entity: string) => after(inner.removeAllFor(entity)),
    read: (filter: TupleFilter) => inner.read(filter),
    listObjects: (user, relation, type) => inner.listObjects(user, relation, type),
    healthCheck: () => inner.healthCheck(),
  };
}
