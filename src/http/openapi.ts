import { z } from 'zod';
import {
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
  createDocument,
} from 'zod-openapi';
import { SERVICE_VERSION } from '../version.js';
import { type ErrorArea, ErrorAreas } from './render-errors.js';
import {
  type ResponseSpec,
  type RouteDefinition,
  type RouteGroup,
  type RouteMounting,
  frameworkResponses,
} from './route.js';

/** The error bodies of each area (spec "Errors"), as reusable components. */
const fieldIssue = z
  .object({
    loc: z
      .array(z.union([z.string(), z.number()]))
      .describe('Where the problem is: path, query or body, then the field'),
    msg: z.string(),
    type: z.string(),
  })
  .meta({ id: 'FieldIssue' });

const envelopeError = z
  .object({
    error: z.string().describe('Error category, e.g. validation_error, unauthorized, not_found'),
    message: z.string(),
    code: z.string().optional().describe('Stable machine-readable code, e.g. AUTH_INVALID_CREDENTIALS'),
    details: z.array(fieldIssue).optional(),
    trace_id: z.string().optional().describe('Present on 500: quote it when reporting the problem'),
    retry_after: z.number().int().optional().describe('Present on 429: seconds to wait'),
    timestamp: z.iso.datetime().optional(),
  })
  .meta({ id: 'ErrorEnvelope' });

const mcpError = z
  .object({
    error: z.object({
      code: z.enum(['invalid_request', 'permission_denied', 'rate_limit_exceeded', 'internal_error']),
      message: z.string(),
      trace_id: z.string().optional(),
    }),
  })
  .meta({ id: 'McpError' });

const detailError = z.object({ detail: z.string() }).meta({ id: 'DetailError' });
const detailValidationError = z.object({ detail: z.array(fieldIssue) }).meta({ id: 'DetailValidationError' });

const scimError = z
  .object({
    schemas: z.array(z.literal('urn:ietf:params:scim:api:messages:2.0:Error')),
    status: z.number().int(),
    detail: z.string(),
    scimType: z.string().optional(),
  })
  .meta({ id: 'ScimError' });

const verifyInvalid = z
  .object({ valid: z.literal(false), error: z.string(), expired_at: z.iso.datetime().optional() })
  .meta({ id: 'VerifyInvalid' });

function errorSchemaFor(area: ErrorArea, status: number): { schema: z.ZodType; contentType: string } {
  switch (area) {
    case 'mcp':
      return { schema: status === 401 ? detailError : mcpError, contentType: 'application/json' };
    case 'data-subject':
      return { schema: status === 422 ? detailValidationError : detailError, contentType: 'application/json' };
    case 'scim':
      return { schema: scimError, contentType: 'application/scim+json' };
    case 'verify':
      return { schema: status === 401 ? verifyInvalid : envelopeError, contentType: 'application/json' };
    case 'envelope':
      return { schema: envelopeError, contentType: 'application/json' };
  }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'Not authenticated',
  403: 'Not permitted',
  404: 'Not found',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Unsupported request media type',
  422: 'Validation error',
  429: 'Rate limit exceeded',
  500: 'Internal error',
  503: 'Service or dependency unavailable',
};

const SECURITY: Record<string, string[]>[] = [{ bearerAuth: [] }, { apiKeyAuth: [] }, { sessionCookie: [] }];

function toOpenApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

function describe(status: number, declared: ResponseSpec | undefined, reasons: string[]): string {
  if (reasons.length === 0) return declared?.description ?? STATUS_TEXT[status] ?? '';
  const when = reasons.join('; ');
  return declared ? `${declared.description}. Also when ${when}` : `${STATUS_TEXT[status] ?? 'Error'}: ${when}`;
}

const MAIN_SERVER = { url: '/', description: 'Main service' };

function operationFor(route: RouteDefinition, mounting: RouteMounting, serverUrl: string | undefined) {
  const responses: Record<string, ZodOpenApiResponseObject> = {};
  const framework = frameworkResponses(route, mounting);
  const statuses = new Set([...Object.keys(route.responses).map(Number), ...framework.keys()]);
  for (const status of [...statuses].sort((a, b) => a - b)) {
    const declared = route.responses[status];
    const description = describe(status, declared, framework.get(status) ?? []);
    if (status >= 400 && !declared?.schema) {
      const { schema, contentType } = errorSchemaFor(mounting.area, status);
      responses[String(status)] = { description, content: { [contentType]: { schema } } };
      continue;
    }
    const content = declared?.schema
      ? { [declared.contentType ?? 'application/json']: { schema: declared.schema } }
      : undefined;
    // A route answering a page (HTML) with a status the framework also answers (with its JSON error) has both.
    const framed = status >= 400 && framework.has(status) ? errorSchemaFor(mounting.area, status) : undefined;
    if (content && framed && !content[framed.contentType]) content[framed.contentType] = { schema: framed.schema };
    responses[String(status)] = content ? { description, content } : { description };
  }
  const req = route.request;
  const operation: ZodOpenApiOperationObject = {
    operationId: route.operationId,
    summary: route.summary,
    tags: route.tags,
    responses,
    security: route.access === 'authenticated' ? SECURITY : [],
    ...(route.description && { description: route.description }),
    ...(route.deprecated && { deprecated: true }),
    ...(serverUrl && { servers: [{ url: serverUrl }] }),
    ...((req?.params || req?.query) && {
      requestParams: { ...(req.params && { path: req.params }), ...(req.query && { query: req.query }) },
    }),
    ...(req?.body && {
      requestBody: {
        required: true,
        content: Object.fromEntries(
          (req.bodyContentTypes ?? ['application/json']).map((type) => [type, { schema: req.body }]),
        ),
      },
    }),
  };
  return operation;
}

export interface DocumentedListener {
  /** Absolute base URL for listeners other than the main one (their operations name their own server). */
  serverUrl?: string;
  /** Groups behind the start-up gate (they answer 503 until the service has started). */
  groups: RouteGroup[];
  /** Groups that answer from the first moment (probes, metrics). */
  alwaysOn?: RouteGroup[];
}

/** Builds the OpenAPI 3.1 document from the same route definitions that serve and validate requests. */
export function buildOpenApiDocument(listeners: DocumentedListener[]): ReturnType<typeof createDocument> {
  const paths: ZodOpenApiPathsObject = {};
  for (const listener of listeners) {
    const mounted = [
      ...(listener.alwaysOn ?? []).map((group) => ({ group, gated: false })),
      ...listener.groups.map((group) => ({ group, gated: true })),
    ];
    // Errors take the shape of the area the listener finds for the path, as `createListenerApp` registers them.
    const areas = new ErrorAreas();
    for (const { group } of mounted) if (group.prefix) areas.add(group.prefix, group.area);
    for (const { group, gated } of mounted) {
      for (const route of group.routes) {
        if (route.internal) continue;
        const served = `${group.prefix}${route.path}`.replace(/\/$/, '') || '/';
        const tagged = { ...route, tags: route.tags ?? group.tags ?? [] };
        const operation = operationFor(tagged, { area: areas.areaFor(served), gated }, listener.serverUrl);
        const path = toOpenApiPath(served);
        // A route served on several listeners (sign-in) is described once, with each listener as a server.
        const described = paths[path]?.[route.method];
        if (described) {
          described.servers = [...(described.servers ?? [MAIN_SERVER]), ...(operation.servers ?? [MAIN_SERVER])];
          continue;
        }
        paths[path] = { ...paths[path], [route.method]: operation };
      }
    }
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Agent Service',
      version: SERVICE_VERSION,
      description:
        'LLM agent server built around the Model Context Protocol, with authentication, credentials, SCIM ' +
        'provisioning, data-subject rights, health probes, a chat playground and a workflow builder.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [MAIN_SERVER],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'session_id' },
      },
    },
  });
}
