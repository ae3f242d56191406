/** The oauth module's public API: the MCP authorization server and the grants users give MCP clients. */
export { createOAuthModule } from './oauth.module.js';
export { type GrantView, type OAuthService } from './oauth.service.js';
export { authorizationServerMetadata } from './oauth.routes.js';
