import type { Module } from '../../ports/module.js';
import { servicePrincipalRoutes } from './service-principals.routes.js';
import { PRINCIPAL_TOKEN_FAMILY, type PrincipalsDeps, ServicePrincipalsService } from './service-principals.service.js';
import { principalObject } from '../../ports/subjects.js';

export type ServicePrincipalsModuleDeps = PrincipalsDeps & {
  /** Tells token verification how to check a principal's token (AuthService.registerTokenFamily). */
  registerTokenFamily: (family: string, isLive: (sid: string, subject: string) => Promise<boolean>) => void;
};

/** Non-human identities: their management routes and the client-credentials grant. */
export function createServicePrincipalsModule(deps: ServicePrincipalsModuleDeps): Module<ServicePrincipalsService> {
  const service = new ServicePrincipalsService(deps);
  deps.registerTokenFamily(PRINCIPAL_TOKEN_FAMILY, (sid, subject) => service.isLive(sid, subject));
  return {
    name: 'service-principals',
    service,
    routes: { main: servicePrincipalRoutes(service) },
    erasure: [
      {
        step: 'authorization_tuples',
        async run({ user }) {
          let removed = 0;
          for (const id of await service.idsOwnedBy(user.id))
            removed += await deps.authz.removeAllFor(principalObject(id));
          return removed;
        },
      },
      { step: 'service_principals', run: ({ user, db }) => service.deleteAllOwnedBy(user.id, db) },
    ],
  };
}
