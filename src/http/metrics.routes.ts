import { z } from 'zod';
import type { Metrics } from './metrics.js';
import { type RouteGroup, defineRoute } from './route.js';

/** `GET /metrics` in the Prometheus text format. */
export function metricsRoutes(metrics: Metrics): RouteGroup {
  return {
    prefix: '',
    area: 'envelope',
    routes: [
      defineRoute({
        method: 'get',
        path: '/metrics',
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        tags: ['Observability'],
        access: 'public',
        responses: {
          200: { description: 'Metrics in the Prometheus text format', schema: z.string(), contentType: 'text/plain' },
        },
        handler: async ({ res }) => {
          res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
        },
      }),
    ],
  };
}
