/** The service-principal module's public API. */
export { servicePrincipalRoutes } from './service-principals.routes.js';
export { PRINCIPAL_TOKEN_FAMILY, ServicePrincipalsService } from './service-principals.service.js';
