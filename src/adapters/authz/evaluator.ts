import type { AuthorizationModel, Userset } from '@openfga/sdk';
import type { Tuple } from './port.js';

/** What the evaluator needs to read: the users (plain, usersets, wildcards) related to an object. */
export interface TupleReader {
  /** Whether exactly this tuple exists. */
  has(tuple: Tuple): Promise<boolean>;
  /** Every `user` of the tuples with this object and relation. */
  usersOf(object: string, relation: string): Promise<string[]>;
}

/** Checks nested deeper than this are refused: a model and tuples this deep are a mistake or an attack. */
const MAX_DEPTH = 25;

export function splitObject(value: string): { type: string; id: string; relation?: string } {
  const hash = value.indexOf('#');
  const base = hash >= 0 ? value.slice(0, hash) : value;
  const colon = base.indexOf(':');
  if (colon <= 0 || colon === base.length - 1) throw new Error(`"${value}" is not of the form type:id`);
  return {
    type: base.slice(0, colon),
    id: base.slice(colon + 1),
    ...(hash >= 0 && { relation: value.slice(hash + 1) }),
  };
}

export interface EvaluatorOptions {
  /**
   * Whether a service principal also holds the permissions of the users it `acts_as` (default true). OpenFGA
   * itself knows nothing of this rule, so a stand-in for an OpenFGA server turns it off.
   */
  actsAs?: boolean;
}

/**
 * Evaluates checks against an OpenFGA model: direct tuples, wildcards, usersets (`group:eng#member`), computed
 * relations (`viewer: … or owner`), tuple-to-userset, union, intersection and exclusion. A service principal that
 * `acts_as` a user additionally has every permission of that user. Cycles in tuples end the search down that
 * path; depth is bounded.
 */
export class Evaluator {
  readonly #relations = new Map<string, Record<string, Userset>>();
  readonly #actsAs: boolean;

  constructor(
    model: AuthorizationModel,
    private readonly reader: TupleReader,
    options: EvaluatorOptions = {},
  ) {
    for (const type of model.type_definitions) this.#relations.set(type.type, type.relations ?? {});
    this.#actsAs = options.actsAs ?? true;
  }

  /** Whether the model defines `relation` on objects of `type`. */
  defines(type: string, relation: string): boolean {
    return this.#relations.get(type)?.[relation] !== undefined;
  }

  async check(user: string, relation: string, object: string): Promise<boolean> {
    if (await this.#check(user, relation, object, new Set(), 0)) return true;
    // A principal acting as users has their permissions too (one level: users do not act as anyone).
    if (this.#actsAs && !user.includes('#') && splitObject(user).type === 'service_principal') {
      for (const delegate of await this.reader.usersOf(user, 'acts_as')) {
        if (delegate !== user && (await this.#check(delegate, relation, object, new Set(), 0))) return true;
      }
    }
    return false;
  }

  async #check(user: string, relation: string, object: string, visited: Set<string>, depth: number): Promise<boolean> {
    const key = `${user}|${relation}|${object}`;
    if (visited.has(key) || depth > MAX_DEPTH) return false;
    visited.add(key);
    const { type } = splitObject(object);
    const rewrite = this.#relations.get(type)?.[relation];
    if (!rewrite) return false;
    return this.#rewrite(rewrite, user, relation, object, visited, depth);
  }

  async #rewrite(
    rewrite: Userset,
    user: string,
    relation: string,
    object: string,
    visited: Set<string>,
    depth: number,
  ): Promise<boolean> {
    if (rewrite.this) return this.#direct(user, relation, object, visited, depth);
    if (rewrite.computedUserset?.relation) {
      return this.#check(user, rewrite.computedUserset.relation, object, visited, depth + 1);
    }
    if (rewrite.tupleToUserset) {
      const target = rewrite.tupleToUserset.computedUserset.relation;
      if (!target) return false;
      for (const parent of await this.reader.usersOf(object, rewrite.tupleToUserset.tupleset.relation ?? '')) {
        if (await this.#check(user, target, parent, visited, depth + 1)) return true;
      }
      return false;
    }
    if (rewrite.union) {
      for (const child of rewrite.union.child) {
        if (await this.#rewrite(child, user, relation, object, visited, depth)) return true;
      }
      return false;
    }
    if (rewrite.intersection) {
      for (const child of rewrite.intersection.child) {
        if (!(await this.#rewrite(child, user, relation, object, new Set(visited), depth))) return false;
      }
      return rewrite.intersection.child.length > 0;
    }
    if (rewrite.difference) {
      return (
        (await this.#rewrite(rewrite.difference.base, user, relation, object, new Set(visited), depth)) &&
        !(await this.#rewrite(rewrite.difference.subtract, user, relation, object, new Set(visited), depth))
      );
    }
    return false;
  }

  async #direct(user: string, relation: string, object: string, visited: Set<string>, depth: number): Promise<boolean> {
    if (await this.reader.has({ user, relation, object })) return true;
    const userType = user.includes('#') ? undefined : splitObject(user).type;
    for (const candidate of await this.reader.usersOf(object, relation)) {
      if (candidate === `${userType}:*`) return true;
      const hash = candidate.indexOf('#');
      if (hash < 0) continue;
      // A userset: every user with that relation to that object.
      if (candidate === user) return true;
      if (await this.#check(user, candidate.slice(hash + 1), candidate.slice(0, hash), visited, depth + 1)) return true;
    }
    return false;
  }
}
