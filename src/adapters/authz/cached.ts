import type { AuthzService, Tuple, TupleFilter } from './port.js';

export interface DecisionCacheOptions {
  /** How long a decision is reused. Bounds how late another instance's tuple change is seen. */
  ttlMs: number;
  /** Most decisions kept; the oldest go first. */
  limit?: number;
  now?: () => number;
}

/**
 * Reuses `check` decisions for a short while, so an authenticated request does not walk tuples in the database
 * (or ask OpenFGA) for a question it asked a moment ago. A tuple written or deleted through this service clears
 * every decision at once, so on this instance a change takes effect for the next request; on another instance it
 * takes effect within `ttlMs`. A check that was already under way when a change was made answers its caller but is
 * not kept.
 */
export function cachingDecisions(inner: AuthzService, options: DecisionCacheOptions): AuthzService {
  const { ttlMs, limit = 50_000, now = Date.now } = options;
  const decisions = new Map<string, { allowed: boolean; until: number }>();
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

  return {
    provider: inner.provider,
    async check(user, relation, object) {
      const key = `${user}\n${relation}\n${object}`;
      const at = now();
      const cached = decisions.get(key);
      if (cached && cached.until > at) return cached.allowed;
      const started = generation;
      const allowed = await inner.check(user, relation, object);
      if (generation === started) {
        if (decisions.size >= limit) decisions.delete(decisions.keys().next().value!);
        decisions.set(key, { allowed, until: at + ttlMs });
      }
      return allowed;
    },
    write: (tuples: Tuple[]) => after(inner.write(tuples)),
    delete: (tuples: Tuple[]) => after(inner.delete(tuples)),
    removeAllFor: (entity: string) => after(inner.removeAllFor(entity)),
    read: (filter: TupleFilter) => inner.read(filter),
    listObjects: (user, relation, type) => inner.listObjects(user, relation, type),
    healthCheck: () => inner.healthCheck(),
  };
}
