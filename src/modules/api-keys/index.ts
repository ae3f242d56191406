/** The API-key module's public API. */
export { createApiKeysModule } from './api-keys.module.js';
export { type ApiKeysService } from './api-keys.service.js';
