import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import type { ExportPart } from '../../ports/data-export.js';
import type { ErasurePart, ErasureStep } from '../../ports/erasure.js';
import type { Module } from '../../ports/module.js';
import type { AuditService } from '../audit/index.js';
import type { UsersService } from '../users/index.js';
import { dataSubjectRoutes } from './data-subject.routes.js';
import { DataSubjectService } from './data-subject.service.js';
import * as store from './data-subject.store.js';
import { ErasureService } from './erasure.service.js';
import { erasureSteps } from './erasure.steps.js';

export interface DataSubjectModuleDeps {
  db: Kysely<Database>;
  users: UsersService;
  audit: AuditService;
  logger: Logger;
  now: () => Date;
  /** Every other module's parts: what erasing a user removes, and what the user's export shows. */
  parts: { erasure: readonly ErasurePart[]; exports: readonly ExportPart[] };
  /** Adjusts the ordered erasure steps (tests make one fail, to see an erasure stop and resume). */
  adjustErasureSteps?: (steps: ErasureStep[]) => ErasureStep[];
}

export interface DataSubjectParts {
  dataSubject: DataSubjectService;
  erasure: ErasureService;
}

/** The data-subject rights: access, export, rectification, erasure and consent (`/api/v1/users/me…`). */
export function createDataSubjectModule(deps: DataSubjectModuleDeps): Module<DataSubjectParts> {
  const { db, users, audit, logger, now } = deps;
  const steps = erasureSteps([...deps.parts.erasure, ...ownErasureParts(audit)]);
  const erasure = new ErasureService({
    db,
    users,
    audit,
    logger,
    now,
    steps: deps.adjustErasureSteps?.(steps) ?? steps,
  });
  const dataSubject = new DataSubjectService({ db, users, audit, now, exports: deps.parts.exports });
  return {
    name: 'data-subject',
    service: { dataSubject, erasure },
    routes: { main: [dataSubjectRoutes({ dataSubject, erasure })] },
  };
}

/** What this module keeps (preferences, consents) and the erasure's own record, which closes the audit trail. */
function ownErasureParts(audit: AuditService): ErasurePart[] {
  return [
    { step: 'preferences', run: ({ user, db }) => store.deletePreferences(db, user.id) },
    { step: 'consents', run: ({ user, db }) => store.deleteConsents(db, user.id) },
    {
      step: 'erasure_record',
      async run({ pseudonym, counts, db, recordId }) {
        // Like every other event of the erased person, the record keeps no address or user agent: they would
        // identify whoever the pseudonym stands for.
        await audit.append(
          {
            type: 'account.erased',
            actorId: pseudonym,
            details: counts,
          },
          db,
          recordId,
        );
        return 1;
      },
    },
  ];
}
