/** The API-key module's public API. */
export { apiKeyRoutes } from './api-keys.routes.js';
export { API_KEY_TOKEN_FAMILY, ApiKeysService } from './api-keys.service.js';
