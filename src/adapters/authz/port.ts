import type { HealthCheck } from '../../ports/health.js';

/**
 * A relationship tuple, in OpenFGA's terms: `user` has `relation` to `object`. Objects are `type:id`; a user
 * is an object, a userset (`group:eng#member`: every member of group eng) or a wildcard (`user:*`).
 */
export interface Tuple {
  user: string;
  relation: string;
  object: string;
}

/** Which tuples to read; `object` may be `type:` to match every object of a type. */
export interface TupleFilter {
  user?: string;
  relation?: string;
  object?: string;
}

/**
 * Authorization decisions over relationship tuples and the model in `src/modules/authz/model.fga`.
 * Implementations: the embedded evaluator over the database (default) and OpenFGA. Both pass
 * `test/contracts/authz.contract.ts`. Writes and deletes are idempotent.
 */
export interface AuthzService {
  readonly provider: 'embedded' | 'openfga';
  check(user: string, relation: string, object: string): Promise<boolean>;
  write(tuples: Tuple[]): Promise<void>;
  delete(tuples: Tuple[]): Promise<void>;
  read(filter: TupleFilter): Promise<Tuple[]>;
  /** Objects of `type` on which `user` has `relation`. */
  listObjects(user: string, relation: string, type: string): Promise<string[]>;
  /** Removes every tuple naming `entity` as object or as user (plain or in a userset); returns how many. */
  removeAllFor(entity: string): Promise<number>;
  healthCheck(): HealthCheck;
}
