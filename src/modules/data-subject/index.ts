/** The data-subject module's public API: access, export, rectification, erasure and consent. */
export { createDataSubjectModule } from './data-subject.module.js';
export { type DataSubjectService } from './data-subject.service.js';
export { type ErasureService, type ErasureStep } from './erasure.service.js';
