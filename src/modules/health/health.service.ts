/**
 * The health module owns the probes; each component registers a check here when the composition root builds
 * it. A check is bounded by its component's time limit (spec "Health": LLM 5 s, authorization 1 s, identity
 * provider 2 s, session store 100 ms), and results are shared for a short time so that open probe endpoints
 * cannot be used to hammer the dependencies behind them.
 */

import type { CheckResult, HealthCheck, HealthStatus } from '../../ports/health.js';

export type { CheckResult, HealthCheck, HealthStatus };

export interface ComponentReport {
  status: HealthStatus;
  critical: boolean;
  response_time_ms: number;
  last_check: string;
  error?: string;
  details: Record<string, unknown>;
}

export interface HealthReport {
  status: Exclude<HealthStatus, 'unknown'>;
  /** The checks the service's status and readiness are made of. */
  components: Record<string, ComponentReport>;
  /** Informational checks: listed with the dependencies, never counted. */
  informational: Record<string, ComponentReport>;
  warnings: string[];
  errors: string[];
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function runBounded(check: HealthCheck, now: () => Date): Promise<ComponentReport> {
  const controller = new AbortController();
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ status: 'unhealthy', message: `no answer within ${check.timeoutMs} ms` });
    }, check.timeoutMs);
  });
  let result: CheckResult;
  try {
    result = await Promise.race([check.run(controller.signal), timeout]);
  } catch (error) {
    result = { status: 'unhealthy', message: describe(error) };
  } finally {
    clearTimeout(timer);
  }
  return {
    status: result.status,
    critical: check.critical,
    response_time_ms: Math.round((performance.now() - started) * 10) / 10,
    last_check: now().toISOString(),
    ...(result.message && result.status !== 'healthy' && { error: result.message }),
    details: { ...check.details, ...result.details },
  };
}

export class HealthService {
  readonly #checks = new Map<string, HealthCheck>();
  #cached: { at: number; report: HealthReport } | undefined;
  #inFlight: Promise<HealthReport> | undefined;

  constructor(
    private readonly cacheMs: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Adds a component's check; a second check with the same name replaces the first. */
  register(check: HealthCheck): void {
    this.#checks.set(check.name, check);
    this.#cached = undefined;
  }

  checks(): HealthCheck[] {
    return [...this.#checks.values()];
  }

  /** Runs every check (concurrently, each within its bound), or returns a report younger than the cache time. */
  async report(): Promise<HealthReport> {
    const cached = this.#cached;
    if (cached && Date.now() - cached.at < this.cacheMs) return cached.report;
    this.#inFlight ??= this.#runAll().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  /** Runs one check now, bypassing the cache (start-up uses this to record each connection). */
  async check(name: string): Promise<ComponentReport | undefined> {
    const check = this.#checks.get(name);
    return check ? runBounded(check, this.now) : undefined;
  }

  async #runAll(): Promise<HealthReport> {
    const checks = [...this.#checks.values()];
    const reports = await Promise.all(checks.map((check) => runBounded(check, this.now)));
    const components: Record<string, ComponentReport> = {};
    const informational: Record<string, ComponentReport> = {};
    const warnings: string[] = [];
    const errors: string[] = [];
    checks.forEach((check, i) => {
      const report = reports[i]!;
      if (check.informational) {
        informational[check.name] = report;
        return;
      }
      components[check.name] = report;
      if (report.status === 'healthy') return;
      const line = `${check.name}: ${report.error ?? report.status}`;
      if (check.critical && report.status === 'unhealthy') errors.push(line);
      else warnings.push(line);
    });
    const status = errors.length > 0 ? 'unhealthy' : warnings.length > 0 ? 'degraded' : 'healthy';
    const report: HealthReport = { status, components, informational, warnings, errors };
    this.#cached = { at: Date.now(), report };
    return report;
  }
}
