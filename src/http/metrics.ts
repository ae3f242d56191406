import type { Request, RequestHandler } from 'express';
import client from 'prom-client';
import { arrivalOf } from './turns.js';

/** Metrics of one app instance: its own registry, so several apps (tests) never share counters. */
export interface Metrics {
  readonly registry: client.Registry;
  /** Counts and times every HTTP request, labelled by route pattern (never the raw path). */
  readonly httpMiddleware: RequestHandler;
  /** Errors no caller handled, that reached the process's last-resort handlers (see process-guards.ts). */
  readonly unhandledErrors: client.Counter<'kind' | 'outcome'>;
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
  type Label = (typeof labelNames)[number];
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
  // One child per label set, found by a plain string key: prom-client would otherwise hash the label object of
  // every observation.
  const series = new Map<string, { count: client.Counter.Internal; time: client.Histogram.Internal<Label> }>();
  const seriesOf = (listener: string, method: string, route: string, statusCode: string) => {
    const key = `${listener} ${method} ${statusCode} ${route}`;
    let found = series.get(key);
    if (!found) {
      const labels = { listener, method, route, status_code: statusCode };
      found = { count: requests.labels(labels), time: duration.labels(labels) };
      series.set(key, found);
    }
    return found;
  };
  const httpMiddleware: RequestHandler = (req, res, next) => {
    const started = arrivalOf(req) ?? performance.now();
    res.once('finish', () => {
      const listener = typeof res.locals.listener === 'string' ? res.locals.listener : 'main';
      const { count, time } = seriesOf(listener, req.method, routeLabel(req, res.locals), String(res.statusCode));
      count.inc();
      time.observe((performance.now() - started) / 1000);
    });
    next();
  };
  const unhandledErrors = new client.Counter({
    name: 'process_unhandled_errors_total',
    help: 'Errors that reached the last-resort handlers: kind (rejection, exception) and outcome (continued, stopped)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  return { registry, httpMiddleware, unhandledErrors };
}
