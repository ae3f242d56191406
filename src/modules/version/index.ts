/** The version module's public API. */
export { createVersionModule } from './version.module.js';
