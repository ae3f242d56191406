/** The system module's public API: the installation record and settings. */
export { createSystemModule } from './system.module.js';
export { type Installation } from './system.service.js';
export { putSettingIfAbsent } from './system.store.js';
