import type { Module } from '../../ports/module.js';
import { apiKeyRoutes } from './api-keys.routes.js';
import { API_KEY_TOKEN_FAMILY, ApiKeysService } from './api-keys.service.js';

export type ApiKeysModuleDeps = ConstructorParameters<typeof ApiKeysService>[0] & {
  /** Tells token verification how to check a token exchanged for a key (AuthService.registerTokenFamily). */
  registerTokenFamily: (family: string, isLive: (sid: string, subject: string) => Promise<boolean>) => void;
  /** Tells of each user whose sessions all ended (AuthService.onUserRevoked): their keys are read afresh. */
  onUserRevoked: (listener: (userId: string) => void) => void;
};

/** Long-lived per-user API keys, the X-API-Key credential and the gateway's key-for-token exchange. */
export function createApiKeysModule(deps: ApiKeysModuleDeps): Module<ApiKeysService> {
  const service = new ApiKeysService(deps);
  deps.registerTokenFamily(API_KEY_TOKEN_FAMILY, (sid, subject) => service.isLive(sid, subject));
  deps.onUserRevoked((userId) => service.forgetUser(userId));
  return {
    name: 'api-keys',
    service,
    routes: { main: [apiKeyRoutes(service)] },
    erasure: [{ step: 'api_keys', run: ({ user, db }) => service.deleteAllOf(user.id, db) }],
    shares: [service],
  };
}
