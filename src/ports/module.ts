import type { ListenerName } from '../http/listener.js';
import type { RouteGroup } from '../http/route.js';
import type { HealthCheck } from './health.js';

/** Route groups for each listener a module serves on. */
export type ListenerRoutes = Partial<Record<ListenerName, RouteGroup[]>>;

/**
 * What a module contributes to the service. Every module is built by one factory, `createXModule(deps)`, that
 * takes the ports it declares and returns its service and these parts; the composition root hands each part to
 * whatever serves it.
 */
export interface Module<Service> {
  readonly name: string;
  /** What other modules and the wires use. */
  readonly service: Service;
  /** Routes that wait until start-up has finished (503 before). */
  readonly routes?: ListenerRoutes;
  /** Routes that answer from the first moment (the health probes). */
  readonly openRoutes?: ListenerRoutes;
  /** Checks of the dependencies the module brought (reported by the health probes). */
  readonly healthChecks?: HealthCheck[];
  /** Runs once at start-up, in the order the composition root lists the modules. */
  start?(): Promise<void>;
  /** Runs once at shutdown, in reverse order, after the listeners have drained. */
  stop?(): Promise<void> | void;
}
