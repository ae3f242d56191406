import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import { AppError, CommonErrorCode, UnauthorizedError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AuditService } from '../audit/index.js';
import { CallerErrorCode } from '../../ports/caller.js';
import type { ErasureContext, ErasureStep, ErasureSubject } from '../../ports/erasure.js';
import type { UsersService } from '../users/index.js';

export type { ErasureContext, ErasureStep, ErasureSubject };

/** The answer to DELETE /api/v1/users/me (spec "DeletionResult"). */
export interface DeletionResult {
  message: string;
  deletion_timestamp: string;
  deleted_items: Record<string, number>;
  anonymized_items: Record<string, number>;
  audit_record_id: string;
}

/**
 * An erasure that stopped at a step. Its message is shown (it names the step and says what to do), its cause
 * never is.
 */
export class ErasureFailedError extends AppError {
  readonly status = 500;
  readonly error = 'internal_error';

  constructor(
    readonly step: string,
    cause: unknown,
  ) {
    super(`Account erasure failed at step "${step}". Repeat the request to complete it.`, {
      code: CommonErrorCode.Internal,
      cause,
    });
  }

  override get expose(): boolean {
    return true;
  }
}

export interface ErasureDeps {
  db: Kysely<Database>;
  users: UsersService;
  audit: AuditService;
  logger: Logger;
  /** In order; see `erasureSteps()` for the service's own. */
  steps: readonly ErasureStep[];
  now?: () => Date;
}

/** Checks the plan when it is built, not when someone's erasure is half-way through it. */
function checkSteps(steps: readonly ErasureStep[]): void {
  const names = new Set<string>();
  for (const step of steps) {
    if (!step.name || names.has(step.name)) throw new Error(`Erasure step names must be unique: "${step.name}"`);
    names.add(step.name);
  }
  const first = steps.findIndex((s) => s.inTransaction);
  const last = steps.findLastIndex((s) => s.inTransaction);
  if (first >= 0 && steps.slice(first, last + 1).some((s) => !s.inTransaction)) {
    throw new Error('Erasure steps that run in the transaction must be contiguous');
  }
}

/**
 * The right to erasure: runs the ordered steps that remove everything the service keeps about a user. A step
 * that fails stops the erasure with a 500 naming it; the steps are idempotent and ordered so that the user's
 * credentials stay valid until the last one, so the same request, repeated, completes the erasure.
 */
export class ErasureService {
  private readonly now: () => Date;
  readonly steps: readonly ErasureStep[];

  constructor(private readonly deps: ErasureDeps) {
    checkSteps(deps.steps);
    this.steps = deps.steps;
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Erases the user. Where the request came from is not taken: the erasure's own record keeps no address or user
   * agent of the person it erases.
   */
  async erase(userId: string): Promise<DeletionResult> {
    const user = await this.deps.users.get(userId);
    if (!user) throw new UnauthorizedError('No such user', { code: CallerErrorCode.InvalidToken });
    const base = {
      user: { id: user.id, username: user.username, email: user.email },
      // Computed before the transaction: on SQLite, reading the hash key inside it would wait for itself.
      pseudonym: await this.deps.audit.pseudonym(user.id),
      recordId: this.deps.audit.newId(),
    };
    const counts: Record<string, number> = {};
    const run = async (step: ErasureStep, db: ErasureContext['db']): Promise<void> => {
      try {
        counts[step.name] = await step.run({ ...base, db, counts: { ...counts } });
      } catch (error) {
        this.deps.logger.error({ err: error, step: step.name }, 'account erasure step failed');
        throw new ErasureFailedError(step.name, error);
      }
    };

    const first = this.steps.findIndex((s) => s.inTransaction);
    const last = this.steps.findLastIndex((s) => s.inTransaction);
    const before = first < 0 ? this.steps : this.steps.slice(0, first);
    for (const step of before) await run(step, this.deps.db);
    if (first >= 0) {
      try {
        await this.deps.db.transaction().execute(async (trx) => {
          for (const step of this.steps.slice(first, last + 1)) await run(step, trx);
        });
      } catch (error) {
        if (error instanceof ErasureFailedError) throw error;
        this.deps.logger.error({ err: error, step: 'commit' }, 'account erasure step failed');
        throw new ErasureFailedError('commit', error);
      }
      for (const step of this.steps.slice(last + 1)) await run(step, this.deps.db);
    }

    const report = (kind: ErasureStep['reports']) =>
      Object.fromEntries(this.steps.filter((s) => s.reports === kind).map((s) => [s.name, counts[s.name] ?? 0]));
    return {
      message: 'Your account and personal data have been erased',
      deletion_timestamp: this.now().toISOString(),
      deleted_items: report('deleted'),
      anonymized_items: report('anonymized'),
      audit_record_id: base.recordId,
    };
  }
}
