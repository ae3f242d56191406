/** The auth module's public API: local identity, tokens and sessions, signing keys, single sign-on. */
export { AuthErrorCode } from './auth.errors.js';
export { createAuthModule } from './auth.module.js';
export { clearSessionCookie } from './auth.routes.js';
export { type AuthService } from './auth.service.js';
export { KeyEncryption } from './key-encryption.js';
export { KeyRing } from './keys.js';
export { base62 } from './secrets.js';
export { type FailureThrottle } from './throttle.js';
export { hashSecret, matchesHash, opaqueToken, type TokenService } from './tokens.js';
