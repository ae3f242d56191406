/** The auth module's public API: local identity, tokens and sessions, signing keys, single sign-on. */
export { authRoutes, clearSessionCookie } from './auth.routes.js';
export { AuthService } from './auth.service.js';
export { ensureAdminEmail } from './bootstrap-admin.js';
export { KeyEncryption } from './key-encryption.js';
export { KeyRing } from './keys.js';
export { base62 } from './secrets.js';
export { ssoRoutes } from './sso.routes.js';
export { OidcSso } from './sso.js';
export { type FailureThrottle } from './throttle.js';
export { TokenService, hashSecret } from './tokens.js';
