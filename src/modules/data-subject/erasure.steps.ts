import type { ErasurePart } from '../../ports/erasure.js';
import type { ErasureContext, ErasureStep } from './erasure.service.js';

/**
 * The steps of an erasure, in order; DeletionResult reports each one's count under its name. Modules contribute
 * the work (their `erasure` parts); this order is the data-subject module's.
 *
 * 1. Other stores first (checkpoints, authorization tuples, rate-limit counters): none of them ends the user's
 *    credentials, so after a failure there the user can still repeat the request.
 * 2. One database transaction: every table, then the erasure's own audit record. A failure rolls all of it back.
 *    The profile goes after everything that refers to it.
 * 3. Last, still inside the transaction although it is another store: the session store. Deleting the sessions
 *    ends every token and cookie, so it happens only once nothing else can fail but the commit; if it fails,
 *    the database is rolled back and the caller's credential still works for the retry.
 */
const PLAN: readonly Omit<ErasureStep, 'run'>[] = [
  outside('checkpoints'),
  outside('upstream_tokens'),
  outside('authorization_tuples'),
  outside('rate_limit_counters'),
  inside('refresh_tokens'),
  inside('oauth_grants'),
  inside('api_keys'),
  inside('service_principals'),
  inside('conversations'),
  inside('playground_sessions'),
  inside('workflow_run_events'),
  inside('workflows'),
  inside('mcp_tasks'),
  inside('mcp_connections'),
  inside('preferences'),
  inside('consents'),
  inside('audit_logs', 'anonymized'),
  inside('manager_references', 'anonymized'),
  inside('profile'),
  inside('erasure_record', 'none'),
  inside('sessions'),
];

function outside(name: string): Omit<ErasureStep, 'run'> {
  return { name, inTransaction: false, reports: 'deleted' };
}

function inside(name: string, reports: ErasureStep['reports'] = 'deleted'): Omit<ErasureStep, 'run'> {
  return { name, inTransaction: true, reports };
}

/** The erasure's steps, each running the parts the modules contributed to it (a step nobody keeps data for counts 0). */
export function erasureSteps(parts: readonly ErasurePart[]): ErasureStep[] {
  const unknown = parts.find((part) => !PLAN.some((step) => step.name === part.step));
  if (unknown) throw new Error(`No erasure step is named "${unknown.step}"`);
  return PLAN.map((step) => {
    const mine = parts.filter((part) => part.step === step.name);
    return {
      ...step,
      async run(context: ErasureContext) {
        let count = 0;
        for (const part of mine) count += await part.run(context);
        return count;
      },
    };
  });
}
