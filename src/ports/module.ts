import type { ErrorRequestHandler, Router } from 'express';
import type { Broadcast } from '../adapters/broadcast/port.js';
import type { ListenerName } from '../http/listener.js';
import type { RouteGroup } from '../http/route.js';
import type { ExportPart } from './data-export.js';
import type { ErasurePart } from './erasure.js';
import type { HealthCheck } from './health.js';

/** Route groups for each listener a module serves on. */
export type ListenerRoutes = Partial<Record<ListenerName, RouteGroup[]>>;

/** A service that keeps recent reads another instance's changes make stale (see `SharedForgetting`). */
export interface SharesForgetting {
  /** Tells the other instances, through `broadcast`, what this one's changes make stale, and forgets what theirs do. */
  shareForgetting(broadcast: Broadcast): () => void;
}

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
  /**
   * What a listener serves outside the route registry (a web UI's static files), from the first moment; an error
   * handler among them renders, in its own shape, what the listener refused on its paths before routing.
   */
  readonly pages?: Partial<Record<ListenerName, (Router | ErrorRequestHandler)[]>>;
  /** Checks of the dependencies the module brought (reported by the health probes). */
  readonly healthChecks?: HealthCheck[];
  /** What erasing a user removes from what this module keeps (its parts of the named erasure steps). */
  readonly erasure?: ErasurePart[];
  /** What a user's data export shows of what this module keeps. */
  readonly exports?: ExportPart[];
  /**
   * The module's services whose instances tell each other through the broadcast what their caches must forget:
   * each is shared as the service is composed, and the stop it returns runs at shutdown, once the modules have
   * stopped.
   */
  readonly shares?: SharesForgetting[];
  /** Runs once at start-up, in the order the composition root lists the modules. */
  start?(): Promise<void>;
  /** Runs once at shutdown, in reverse order, after the listeners have drained. */
  stop?(): Promise<void> | void;
}
