import type { Request, RequestHandler } from 'express';
import client from 'prom-client';

/** Metrics of one app instance: its own registry, so several apps (tests) never share counters. */
export interface Metrics {
  readonly registry: client.Registry;
  /** Counts and times every HTTP request, labelled by route pattern (never the raw path). */
  readonly httpMiddleware: RequestHandler;
}

/**
 * The matched route pattern. Registry routes record it when they match (see route.ts), because by the time an
 * error response finishes express has already reset `req.baseUrl`.
 */
function routeLabel(req: Request, locals: Record<string, unknown>): string {
  if (typeof locals.route === 'string') return locals.route;
  const route = req.route as { path?: unknown } | undefined;
  return typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : 'unmatched';
}

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const labelNames = ['listener', 'method', 'route', 'status_code'] as const;
  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests served, by listener, method, route pattern and status code',
    labelNames,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency from arrival to the end of the response',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const httpMiddleware: RequestHandler = (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = {
        listener: typeof res.locals.listener === 'string' ? res.locals.listener : 'main',
        method: req.method,
        route: routeLabel(req, res.locals),
        status_code: String(res.statusCode),
      };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
  return { registry, httpMiddleware };
}
