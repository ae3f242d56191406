/** The data-subject module's public API: access, export, rectification, erasure and consent. */
export { dataSubjectRoutes } from './data-subject.routes.js';
export { DataSubjectService } from './data-subject.service.js';
export { ErasureService, type ErasureStep } from './erasure.service.js';
export { erasureSteps } from './erasure.steps.js';
