import type { Request } from 'express';
import { z } from 'zod';
import { callerOf } from '../../http/authenticate.js';
import { renderError } from '../../http/render-errors.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import { scimBadRequest } from './scim.errors.js';
import { isObject, member } from './scim.patch.js';
import { splitAttributes } from './scim.representation.js';
import {
  DEFAULT_COUNT,
  MAX_COUNT,
  SCIM_BODY_TYPES,
  SCIM_CONTENT_TYPE,
  SEARCH_REQUEST_SCHEMA,
  ScimBulkRequest,
  ScimBulkResponse,
  ScimDocument,
  ScimGroup,
  ScimGroupRequest,
  ScimPatchRequest,
  ScimSearchRequest,
  ScimUser,
  ScimUserRequest,
  listResponseSchema,
} from './scim.schemas.js';
import type { ListQuery, ResourceEndpoint, ScimContext, ScimService } from './scim.service.js';

const TAGS = ['SCIM 2.0'];
const JSON_OUT = { contentType: 'application/scim+json' };

const ScimDocumentList = listResponseSchema(ScimDocument, 'ScimDiscoveryListResponse');

const startIndex = z.coerce
  .number({ message: 'startIndex must be an integer' })
  .int('startIndex must be an integer')
  .min(1, 'startIndex must be at least 1')
  .default(1)
  .describe('1-based index of the first result (default 1)');
const count = z.coerce
  .number({ message: `count must be an integer from 1 to ${MAX_COUNT}` })
  .int(`count must be an integer from 1 to ${MAX_COUNT}`)
  .min(1, `count must be an integer from 1 to ${MAX_COUNT}`)
  .max(MAX_COUNT, `count must be an integer from 1 to ${MAX_COUNT}`)
  .default(DEFAULT_COUNT)
  .describe(`Results per page, 1-${MAX_COUNT} (default ${DEFAULT_COUNT})`);
const projection = {
  attributes: z.string().optional().describe('Comma-separated attributes to return (id and schemas always are)'),
  excludedAttributes: z.string().optional().describe('Comma-separated attributes to leave out'),
};

const ListQuerySchema = z.object({
  filter: z
    .string()
    .optional()
    .describe('RFC 7644 §3.4.2.2 filter: eq ne co sw ew gt ge lt le pr, and or not, ( ), value paths a[b eq "c"]'),
  startIndex,
  count,
  sortBy: z.string().optional().describe('Attribute to sort by, e.g. userName, name.familyName, meta.created'),
  sortOrder: z.string().optional().describe('ascending (default) or descending'),
  ...projection,
});
const ProjectionQuery = z.object(projection);

const errors = {
  400: {
    description:
      'Invalid request (scimType invalidValue, invalidSyntax, invalidFilter, invalidPath, tooMany or mutability)',
  },
  403: { description: 'The caller may not provision' },
};

function scim(status: number, body?: unknown, headers: Record<string, string> = {}): Reply {
  return new Reply(status, body, body === undefined ? headers : { 'Content-Type': SCIM_CONTENT_TYPE, ...headers });
}

/** The `attributes`/`excludedAttributes` projection of a request (comma-separated lists). */
function projectionOf(query: { attributes?: string | undefined; excludedAttributes?: string | undefined }) {
  return {
    attributes: splitAttributes(query.attributes),
    excludedAttributes: splitAttributes(query.excludedAttributes),
  };
}

function listQuery(query: z.output<typeof ListQuerySchema>): ListQuery {
  return {
    filter: query.filter,
    startIndex: query.startIndex,
    count: query.count,
    sortBy: query.sortBy,
    sortOrder: query.sortOrder,
    ...projectionOf(query),
  };
}

/** A SearchRequest body (RFC 7644 §3.4.3) as the query of a GET, with the same bounds. */
function searchQuery(body: unknown): ListQuery {
  const bad = (message: string) => scimBadRequest(message, 'invalidValue');
  if (!isObject(body)) throw bad('The request body must be a SearchRequest');
  const schemas = member(body, 'schemas');
  if (
    !Array.isArray(schemas) ||
    !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === SEARCH_REQUEST_SCHEMA.toLowerCase())
  ) {
    throw bad(`schemas must include ${SEARCH_REQUEST_SCHEMA}`);
  }
  const text = (name: string) => {
    const value = member(body, name);
    if (value !== undefined && value !== null && typeof value !== 'string') throw bad(`${name} must be a string`);
    return value ?? undefined;
  };
  const list = (name: string) => {
    const value = member(body, name);
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
      throw bad(`${name} must be an array of strings`);
    return splitAttributes(value);
  };
  const parsed = z.object({ startIndex, count }).safeParse({
    startIndex: member(body, 'startIndex') ?? undefined,
    count: member(body, 'count') ?? undefined,
  });
  if (!parsed.success) throw bad(parsed.error.issues[0]!.message);
  return {
    filter: text('filter'),
    sortBy: text('sortBy'),
    sortOrder: text('sortOrder'),
    attributes: list('attributes'),
    excludedAttributes: list('excludedAttributes'),
    ...parsed.data,
  };
}

/** The two routes of a discovery document type (RFC 7644 §4): all of them, and one by `param`. */
function discoveryRoutes(
  docs: {
    plural: string;
    one: string;
    param: string;
    maxLength: number;
    summary: string;
    oneSummary: string;
    missing: string;
  },
  list: () => unknown,
  get: (key: string) => unknown,
  context: (req: Request) => Promise<ScimContext>,
) {
  const { plural, one, param } = docs;
  return [
    defineRoute({
      method: 'get',
      path: `/${plural}`,
      operationId: `scimList${plural}`,
      summary: docs.summary,
      responses: { 200: { description: plural, schema: ScimDocumentList, ...JSON_OUT }, ...errors },
      handler: async ({ req }) => {
        await context(req);
        return scim(200, list());
      },
    }),
    defineRoute({
      method: 'get',
      path: `/${plural}/:${param}`,
      operationId: `scimGet${one}`,
      summary: docs.oneSummary,
      request: { params: z.object({ [param]: z.string().max(docs.maxLength) }) },
      responses: {
        200: { description: one, schema: ScimDocument, ...JSON_OUT },
        ...errors,
        404: { description: docs.missing },
      },
      handler: async ({ params, req }) => {
        await context(req);
        // The schema above requires the parameter, so it is there.
        return scim(200, get(params[param]!));
      },
    }),
  ];
}

/** What the routes of one resource type say of it, in OpenAPI, beyond what its name gives. */
interface ResourceDocs {
  type: 'User' | 'Group';
  /** The path parameter naming one resource. */
  param: string;
  resource: z.ZodType;
  list: z.ZodType;
  request: z.ZodType;
  /** The attribute whose uniqueness a 409 defends. */
  unique: string;
  listDescription: string;
  create: { description: string; conflict: string };
  replace: { summary: string; description?: string };
  patch: { summary: string; description?: string };
  delete: { summary: string; description?: string; done: string };
}

const USERS: ResourceDocs = {
  type: 'User',
  param: 'user_id',
  resource: ScimUser,
  list: listResponseSchema(ScimUser, 'ScimUserListResponse'),
  request: ScimUserRequest,
  unique: 'userName',
  listDescription:
    'Filters run in the database (userName, emails and externalId comparisons use indexes). startIndex ≥ 1 ' +
    `(default 1); count 1-${MAX_COUNT} (default ${DEFAULT_COUNT}).`,
  create: {
    description: 'A local user who can sign in with the password given here. userName is unique regardless of case.',
    conflict: 'userName (or the sign-in email) is taken (scimType uniqueness)',
  },
  replace: {
    summary: 'Replace a user',
    description: 'Attributes left out are cleared, except password and active, which are kept.',
  },
  patch: {
    summary: 'Change a user with PATCH operations',
    description: 'active=false deactivates (as DELETE does); active=true reactivates.',
  },
  delete: {
    summary: 'Deactivate a user',
    description:
      'The user is kept, inactive: sign-in, sessions and tokens stop working and authorization tuples are ' +
      'removed. PATCH active=true reactivates and restores them.',
    done: 'Deactivated',
  },
};

const GROUPS: ResourceDocs = {
  type: 'Group',
  param: 'group_id',
  resource: ScimGroup,
  list: listResponseSchema(ScimGroup, 'ScimGroupListResponse'),
  request: ScimGroupRequest,
  unique: 'displayName',
  listDescription: 'excludedAttributes=members skips loading members.',
  create: {
    description:
      'The group is also named by a path (`/Display Name`, sanitized); its members get `group:<id>#member` tuples.',
    conflict: 'A group with this displayName exists (scimType uniqueness)',
  },
  replace: { summary: 'Replace a group (its displayName, externalId and members)' },
  patch: { summary: 'Change a group with PATCH operations (add, remove or replace members, rename)' },
  delete: { summary: 'Delete a group and its membership tuples', done: 'Deleted' },
};

/**
 * The routes of one resource type's endpoint (RFC 7644 §3): list, search, create, get, replace, patch and delete,
 * each authorizing the caller before it asks `endpoint`.
 */
function resourceRoutes(
  docs: ResourceDocs,
  endpoint: ResourceEndpoint,
  context: (req: Request) => Promise<ScimContext>,
) {
  const { type } = docs;
  const plural = `${type}s`;
  const noun = type.toLowerCase();
  const one = `/${plural}/:${docs.param}`;
  const params = z.object({ [docs.param]: z.string().max(256) });
  // The schema above requires the parameter, so it is there.
  const idOf = (values: Record<string, string>) => values[docs.param]!;
  const found = { description: `The ${noun}`, schema: docs.resource, ...JSON_OUT };
  const missing = { 404: { description: `No such ${noun}` } };
  const taken = { 409: { description: `${docs.unique} taken` } };
  const listed = { 200: { description: 'ListResponse', schema: docs.list, ...JSON_OUT }, ...errors };
  const read = async <T>(req: Request, answer: () => Promise<T>) => {
    await context(req);
    return scim(200, await answer());
  };
  return [
    defineRoute({
      method: 'get',
      path: `/${plural}`,
      operationId: `scimList${plural}`,
      summary: `${plural}, filtered, sorted and paged`,
      description: docs.listDescription,
      request: { query: ListQuerySchema },
      responses: listed,
      handler: ({ query, req }) => read(req, () => endpoint.list(listQuery(query))),
    }),
    defineRoute({
      method: 'post',
      path: `/${plural}/.search`,
      operationId: `scimSearch${plural}`,
      summary: `${plural}, by a SearchRequest body (RFC 7644 §3.4.3)`,
      request: { body: ScimSearchRequest, bodyContentTypes: SCIM_BODY_TYPES },
      responses: listed,
      handler: ({ body, req }) => read(req, () => endpoint.list(searchQuery(body))),
    }),
    defineRoute({
      method: 'post',
      path: `/${plural}`,
      operationId: `scimCreate${type}`,
      summary: `Provision a ${noun}`,
      description: docs.create.description,
      request: { body: docs.request, bodyContentTypes: SCIM_BODY_TYPES },
      responses: {
        201: { description: 'Created; Location names it', schema: docs.resource, ...JSON_OUT },
        ...errors,
        409: { description: docs.create.conflict },
      },
      handler: async ({ body, req }) => {
        const resource = await endpoint.create(await context(req), body);
        const location = (resource.meta as { location: string }).location;
        return scim(201, resource, { Location: location });
      },
    }),
    defineRoute({
      method: 'get',
      path: one,
      operationId: `scimGet${type}`,
      summary: `One ${noun}`,
      request: { params, query: ProjectionQuery },
      responses: { 200: found, ...errors, 404: { description: `No such ${noun} (scimType notFound)` } },
      handler: ({ params, query, req }) => read(req, () => endpoint.get(idOf(params), projectionOf(query))),
    }),
    // PUT replaces the resource, PATCH applies operations to it: the same route otherwise.
    ...(
      [
        ['put', 'Replace', docs.replace, docs.request, endpoint.replace],
        ['patch', 'Patch', docs.patch, ScimPatchRequest, endpoint.patch],
      ] as const
    ).map(([method, verb, text, request, change]) =>
      defineRoute({
        method,
        path: one,
        operationId: `scim${verb}${type}`,
        ...text,
        request: { params, body: request, bodyContentTypes: SCIM_BODY_TYPES },
        responses: { 200: found, ...errors, ...missing, ...taken },
        handler: async ({ params, body, req }) => scim(200, await change(await context(req), idOf(params), body)),
      }),
    ),
    defineRoute({
      method: 'delete',
      path: one,
      operationId: `scimDelete${type}`,
      summary: docs.delete.summary,
      ...(docs.delete.description !== undefined && { description: docs.delete.description }),
      request: { params },
      responses: { 204: { description: docs.delete.done }, ...errors, ...missing },
      handler: async ({ params, req }) => {
        await endpoint.delete(await context(req), idOf(params));
        return scim(204);
      },
    }),
  ];
}

/** Every SCIM route answers SCIM errors (the group's area) and needs a caller who may provision. */
export function scimRoutes(service: ScimService): RouteGroup {
  const context = async (req: Request): Promise<ScimContext> => {
    const caller = callerOf(req);
    await service.authorize(caller);
    return { caller, ip: req.ip ?? null, userAgent: req.get('User-Agent') ?? null };
  };

  return {
    prefix: '/scim/v2',
    area: 'scim',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/ServiceProviderConfig',
        operationId: 'scimGetServiceProviderConfig',
        summary: 'SCIM features this service supports',
        description: 'Patch, bulk (maxOperations, maxPayloadSize), filter (maxResults), sort, password change.',
        responses: { 200: { description: 'ServiceProviderConfig', schema: ScimDocument, ...JSON_OUT }, ...errors },
        handler: async ({ req }) => {
          await context(req);
          return scim(200, service.serviceProviderConfig());
        },
      }),
      ...discoveryRoutes(
        {
          plural: 'ResourceTypes',
          one: 'ResourceType',
          param: 'name',
          maxLength: 64,
          summary: 'The resource types: User (with the enterprise extension) and Group',
          oneSummary: 'One resource type',
          missing: 'No such resource type',
        },
        () => service.resourceTypes(),
        (name) => service.resourceType(name),
        context,
      ),
      ...discoveryRoutes(
        {
          plural: 'Schemas',
          one: 'Schema',
          param: 'schema_id',
          maxLength: 256,
          summary: 'The schemas: User, EnterpriseUser, Group, with every attribute and its characteristics',
          oneSummary: 'One schema, by URN',
          missing: 'No such schema',
        },
        () => service.schemas(),
        (id) => service.schema(id),
        context,
      ),

      ...resourceRoutes(USERS, service.endpoint('User'), context),
      ...resourceRoutes(GROUPS, service.endpoint('Group'), context),

      defineRoute({
        method: 'post',
        path: '/Bulk',
        operationId: 'scimBulk',
        summary: 'Several creates, replaces, patches and deletes in one request',
        description:
          'Each operation succeeds or fails on its own. maxOperations and maxPayloadSize are in /ServiceProviderConfig.',
        request: { body: ScimBulkRequest, bodyContentTypes: SCIM_BODY_TYPES },
        responses: {
          200: {
            description: 'BulkResponse: one result per operation run, in request order',
            schema: ScimBulkResponse,
            ...JSON_OUT,
          },
          ...errors,
          413: { description: 'More than maxOperations operations (scimType tooMany) or a body over maxPayloadSize' },
        },
        handler: async ({ body, req }) => {
          const results = await service.bulk(await context(req), body);
          const traceId = typeof req.id === 'string' ? req.id : JSON.stringify(req.id);
          return scim(200, {
            schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkResponse'],
            Operations: results.map((r) => ({
              method: r.method,
              ...(r.bulkId !== undefined && { bulkId: r.bulkId }),
              ...(r.location !== undefined && { location: r.location }),
              status: String(r.status),
              ...(r.error !== undefined && { response: renderError('scim', r.error, traceId).body }),
            })),
          });
        },
      }),
    ],
  };
}
