import type { Module } from '../../ports/module.js';
import { versionRoutes } from './version.routes.js';

/** The service's name, version and build: `GET /api/version`. */
export function createVersionModule(): Module<void> {
  return { name: 'version', service: undefined, routes: { main: [versionRoutes()] } };
}
