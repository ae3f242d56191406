/** The service-principal module's public API. */
export { createServicePrincipalsModule } from './service-principals.module.js';
export { type ServicePrincipalsService } from './service-principals.service.js';
