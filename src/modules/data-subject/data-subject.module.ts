import type { Logger } from '../../logger.js';
import type { ErasureStep } from '../../ports/erasure.js';
import type { Module } from '../../ports/module.js';
import { dataSubjectRoutes } from './data-subject.routes.js';
import { type DataSubjectDeps, DataSubjectService } from './data-subject.service.js';
import { ErasureService } from './erasure.service.js';
import { type ErasureStepDeps, erasureSteps } from './erasure.steps.js';

export type DataSubjectModuleDeps = DataSubjectDeps & {
  logger: Logger;
  /** What the erasure steps act on: each store that keeps something about a person. */
  erasure: Omit<ErasureStepDeps, 'users' | 'auth' | 'conversations' | 'audit'>;
  /** Adjusts the ordered erasure steps (tests make one fail, to see an erasure stop and resume). */
  adjustErasureSteps?: (steps: ErasureStep[]) => ErasureStep[];
};

export interface DataSubjectParts {
  dataSubject: DataSubjectService;
  erasure: ErasureService;
}

/** The data-subject rights: access, export, rectification, erasure and consent (`/api/v1/users/me…`). */
export function createDataSubjectModule(deps: DataSubjectModuleDeps): Module<DataSubjectParts> {
  const { db, users, auth, conversations, audit, logger, now } = deps;
  const steps = erasureSteps({ ...deps.erasure, users, auth, conversations, audit });
  const erasure = new ErasureService({
    db,
    users,
    audit,
    logger,
    ...(now && { now }),
    steps: deps.adjustErasureSteps?.(steps) ?? steps,
  });
  const dataSubject = new DataSubjectService(deps);
  return {
    name: 'data-subject',
    service: { dataSubject, erasure },
    routes: { main: [dataSubjectRoutes({ dataSubject, erasure })] },
  };
}
