/**
 * The health-check port: every component that can fail (database, session store, authorization service, identity
 * provider, LLM provider, search) offers one of these, and the health module runs them.
 */

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';

export interface CheckResult {
  status: Exclude<HealthStatus, 'unknown'>;
  /** Why the component is not healthy; reported in warnings and errors. */
  message?: string;
  /** Component-specific facts (provider, url, model, connected_clients…). Never secrets. */
  details?: Record<string, unknown>;
}

/** A component's health check, registered by the code that builds the component. */
export interface HealthCheck {
  /** The key in every health response: database, session_store, authz_service, identity_provider, llm_provider. */
  name: string;
  /** A critical component that is down makes the service unhealthy and not ready; others only degrade it. */
  critical: boolean;
  /** Longer than this and the component counts as unhealthy. */
  timeoutMs: number;
  /**
   * Informational: reported by `/health/dependencies` only, never in the service's own status or readiness (the
   * servers users connected: one of them being down is their concern, not the service's).
   */
  informational?: boolean;
  /** True for in-process defaults (nothing to connect to): start-up reports them as `loaded`. */
  embedded?: boolean;
  /** Facts known without contacting the component, shown even when the check fails. */
  details?: Record<string, unknown>;
  run(signal: AbortSignal): Promise<CheckResult>;
}
