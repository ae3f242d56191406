import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.js';

/*
 * The erasure port: every module that keeps personal data contributes its part of the named erasure steps (right
 * to erasure); the data-subject module owns the steps' order and runs them.
 */

/** Who is being erased, as they were when the erasure began. */
export interface ErasureSubject {
  id: string;
  username: string;
  email: string | null;
}

export interface ErasureContext {
  readonly user: ErasureSubject;
  /** The keyed hash that stands for the user in what is kept (the audit log). */
  readonly pseudonym: string;
  /** The erasure's transaction for steps inside it; the service's database handle for the others. */
  readonly db: Kysely<Database> | Transaction<Database>;
  /** What each step before this one removed, by step name. */
  readonly counts: Readonly<Record<string, number>>;
  /** The id the erasure's own audit record takes (DeletionResult.audit_record_id). */
  readonly recordId: string;
}

/**
 * One named part of an erasure. Steps run in the order given. The steps marked `inTransaction` must be contiguous:
 * they run while one database transaction is open, so that a failure of any of them rolls back the database work
 * of all of them. Every step must be idempotent, because a failed erasure is finished by repeating it.
 */
export interface ErasureStep {
  /** Named in the 500 of an erasure that fails here, and the key of its count in DeletionResult. */
  readonly name: string;
  readonly inTransaction: boolean;
  /** Where DeletionResult reports the step's count. */
  readonly reports: 'deleted' | 'anonymized' | 'none';
  /** Does the step's work and returns how many items it removed or anonymized. */
  run(context: ErasureContext): Promise<number>;
}

/**
 * A module's share of one named erasure step. Several modules may share a step (each removes the authorization
 * tuples of what it owns): the step runs their parts in module order and reports the sum.
 */
export interface ErasurePart {
  /** One of the data-subject module's step names (`api_keys`, `authorization_tuples`, …). */
  readonly step: string;
  /** Removes or anonymizes what the module keeps about the user; idempotent. Returns how many items. */
  run(context: ErasureContext): Promise<number>;
}
