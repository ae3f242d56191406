/** The system module's public API: the installation record and settings. */
export { ensureInstallation, type Installation } from './system.service.js';
export { getSetting, putSetting, putSettingIfAbsent } from './system.store.js';
