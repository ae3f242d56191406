/** The version module's public API. */
export { versionRoutes } from './version.routes.js';
