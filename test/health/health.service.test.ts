import { describe, expect, it } from 'vitest';
import { type CheckResult, type HealthCheck, HealthService } from '../../src/modules/health/health.service.js';
import { StartupTracker } from '../../src/modules/health/startup.js';

function check(
  name: string,
  critical: boolean,
  run: (signal: AbortSignal) => Promise<CheckResult>,
  timeoutMs = 200,
): HealthCheck {
  return { name, critical, timeoutMs, run };
}

const healthy = () => Promise.resolve<CheckResult>({ status: 'healthy' });

describe('HealthService', () => {
  it('is healthy when every check is', async () => {
    const health = new HealthService(0);
    health.register(check('database', true, healthy));
    health.register(check('llm_provider', false, healthy));
    const report = await health.report();
    expect(report.status).toBe('healthy');
    expect(report.warnings).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(Object.keys(report.components)).toEqual(['database', 'llm_provider']);
  });

  it('is unhealthy when a critical check fails, and says why', async () => {
    const health = new HealthService(0);
    health.register(check('database', true, () => Promise.reject(new Error('connection refused'))));
    health.register(check('llm_provider', false, healthy));
    const report = await health.report();
    expect(report.status).toBe('unhealthy');
    expect(report.errors).toEqual(['database: connection refused']);
    expect(report.components.database).toMatchObject({
      status: 'unhealthy',
      error: 'connection refused',
      critical: true,
    });
  });

  it('is only degraded when a non-critical check fails or a check reports degraded', async () => {
    const health = new HealthService(0);
    health.register(check('database', true, () => Promise.resolve({ status: 'degraded', message: 'slow' })));
    health.register(
      check('llm_provider', false, () => Promise.resolve({ status: 'unhealthy', message: 'API key rejected' })),
    );
    const report = await health.report();
    expect(report.status).toBe('degraded');
    expect(report.warnings).toEqual(['database: slow', 'llm_provider: API key rejected']);
  });

  it('counts a check that outlives its time bound as unhealthy and aborts it', async () => {
    const health = new HealthService(0);
    let aborted = false;
    health.register(
      check(
        'session_store',
        true,
        (signal) =>
          new Promise<CheckResult>((resolve) => {
            signal.addEventListener('abort', () => {
              aborted = true;
            });
            setTimeout(() => resolve({ status: 'healthy' }), 1_000).unref();
          }),
        50,
      ),
    );
    const report = await health.report();
    expect(report.components.session_store).toMatchObject({ status: 'unhealthy', error: 'no answer within 50 ms' });
    expect(report.components.session_store!.response_time_ms).toBeGreaterThanOrEqual(45);
    expect(aborted).toBe(true);
  });

  it('shares one run between concurrent callers and caches it for the cache time', async () => {
    const health = new HealthService(60_000);
    let runs = 0;
    health.register(
      check('database', true, async () => {
        runs += 1;
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { status: 'healthy' };
      }),
    );
    await Promise.all([health.report(), health.report(), health.report()]);
    await health.report();
    expect(runs).toBe(1);
    // Registering a check invalidates the cache.
    health.register(check('llm_provider', false, healthy));
    await health.report();
    expect(runs).toBe(2);
  });

  it('merges static and reported details, and reports timing', async () => {
    const health = new HealthService(0, () => new Date('2026-05-06T07:08:09Z'));
    health.register({
      name: 'llm_provider',
      critical: false,
      timeoutMs: 100,
      details: { provider: 'openai', model: 'm' },
      run: () => Promise.resolve({ status: 'healthy', details: { latency_class: 'fast' } }),
    });
    const { components } = await health.report();
    expect(components.llm_provider).toEqual({
      status: 'healthy',
      critical: false,
      response_time_ms: expect.any(Number) as unknown,
      last_check: '2026-05-06T07:08:09.000Z',
      details: { provider: 'openai', model: 'm', latency_class: 'fast' },
    });
  });
});

describe('StartupTracker', () => {
  it('reports progress while starting and duration once finished', () => {
    const startup = new StartupTracker([
      'database_migrations',
      'llm_connection',
      'authz_model',
      'session_store_connection',
    ]);
    expect(startup.snapshot()).toMatchObject({ started: false, progressPercent: 0 });
    startup.set('database_migrations', 'completed');
    startup.set('llm_connection', 'in_progress');
    startup.set('authz_model', 'loaded');
    expect(startup.snapshot()).toMatchObject({
      started: false,
      progressPercent: 50,
      initialization: {
        database_migrations: 'completed',
        llm_connection: 'in_progress',
        authz_model: 'loaded',
        session_store_connection: 'pending',
      },
    });
    startup.finish();
    const done = startup.snapshot();
    expect(done.started).toBe(true);
    expect(done.durationSeconds).toBeGreaterThanOrEqual(0);
  });
});
