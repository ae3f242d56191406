/** The authorization module's public API: the authorization model. */
export { authorizationModel } from './model.js';
