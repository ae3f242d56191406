import { z } from 'zod';
import { type RouteGroup, defineRoute } from '../../http/route.js';
import {
  API_VERSION,
  DEPRECATED_API_VERSIONS,
  SERVICE_NAME,
  SERVICE_VERSION,
  SUNSET_DATES,
  SUPPORTED_API_VERSIONS,
} from '../../version.js';

const VersionMetadata = z
  .object({
    service: z.string(),
    version: z.string().describe('Release of the service'),
    api_version: z.string().describe('Current API version'),
    supported_versions: z.array(z.string()).describe('Values accepted in the X-API-Version header'),
    deprecated_versions: z.array(z.string()),
    sunset_dates: z.record(z.string(), z.string()).describe('Deprecated version → date after which it is removed'),
    documentation_url: z.string(),
  })
  .meta({ id: 'VersionMetadata' });

export function versionRoutes(): RouteGroup {
  return {
    prefix: '/api',
    area: 'envelope',
    routes: [
      defineRoute({
        method: 'get',
        path: '/version',
        operationId: 'getVersion',
        summary: 'Service release and API version metadata',
        tags: ['Version'],
        access: 'public',
        responses: { 200: { description: 'Version metadata', schema: VersionMetadata } },
        handler: () => ({
          service: SERVICE_NAME,
          version: SERVICE_VERSION,
          api_version: API_VERSION,
          supported_versions: [...SUPPORTED_API_VERSIONS],
          deprecated_versions: [...DEPRECATED_API_VERSIONS],
          sunset_dates: { ...SUNSET_DATES },
          documentation_url: '/docs',
        }),
      }),
    ],
  };
}
