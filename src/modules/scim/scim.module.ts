import type { Module } from '../../ports/module.js';
import { scimRoutes } from './scim.routes.js';
import { ScimService, type ScimServiceDeps } from './scim.service.js';
import { clearManagerReferences } from './scim.store.js';

export type ScimModuleDeps = ScimServiceDeps;

/** SCIM 2.0 provisioning (`/scim/v2/…`): the identity provider's view of the local users and groups. */
export function createScimModule(deps: ScimModuleDeps): Module<ScimService> {
  const scim = new ScimService(deps);
  return {
    name: 'scim',
    service: scim,
    routes: { main: [scimRoutes(scim)] },
    erasure: [{ step: 'manager_references', run: ({ user, db }) => clearManagerReferences(db, user.id) }],
  };
}
