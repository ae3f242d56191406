import { z } from 'zod';
import { BadRequestError, CommonErrorCode } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import type { Request } from 'express';
import { clientInfo } from '../../http/request-context.js';
import { asUser } from '../../ports/caller.js';
import type { ServicePrincipalsService } from './service-principals.service.js';

const TAGS = ['Service principals'];

const ServicePrincipal = z
  .object({
    service_id: z.string().describe('Slug derived from the name'),
    name: z.string(),
    description: z.string(),
    authentication_mode: z.enum(['client_credentials', 'service_account_user']),
    associated_user_id: z.string().optional().describe('user:<name>'),
    owner_user_id: z.string().describe('user:<name>'),
    inherit_permissions: z.boolean(),
    enabled: z.boolean(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'ServicePrincipal' });

const CreatedServicePrincipal = ServicePrincipal.extend({
  client_secret: z.string().describe('Shown only in this response: sp_secret_…'),
  message: z.string(),
}).meta({ id: 'CreatedServicePrincipal' });

const CreateServicePrincipal = z
  .object({
    name: z.string().trim().min(1).max(100),
    description: z.string().max(1000),
    authentication_mode: z
      .string()
      .max(64)
      .default('client_credentials')
      .describe('client_credentials or service_account_user (alias service_account)'),
    associated_user_id: z.string().max(300).optional().describe('user:<name>; required for service_account_user'),
    inherit_permissions: z.boolean().default(false),
  })
  .meta({ id: 'CreateServicePrincipal' });

const RotatedSecret = z
  .object({ service_id: z.string(), client_secret: z.string(), message: z.string() })
  .meta({ id: 'RotatedSecret' });

const ClientCredentialsRequest = z
  .object({
    grant_type: z.string().max(64),
    client_id: z.string().max(128).optional(),
    client_secret: z.string().max(256).optional(),
    scope: z.string().max(1024).optional(),
  })
  .meta({ id: 'ClientCredentialsRequest' });

const ClientCredentialsToken = z
  .object({ access_token: z.string(), token_type: z.literal('Bearer'), expires_in: z.number().int() })
  .meta({ id: 'ClientCredentialsToken' });

const idParams = z.object({ service_id: z.string().min(1).max(64) });

/** Service principals are managed by the people who own them. */
function userCaller(req: Request) {
  return asUser(callerOf(req), 'Service principals are managed by users');
}

/** HTTP Basic client authentication (RFC 6749 §2.3.1), the usual alternative to credentials in the body. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
}

export function servicePrincipalRoutes(principals: ServicePrincipalsService): RouteGroup[] {
  const management: RouteGroup = {
    prefix: '/api/v1/service-principals',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'createServicePrincipal',
        summary: 'Create a service principal',
        description:
          'The caller becomes its owner. The client secret is returned once; only its hash is kept. ' +
          'associated_user_id (service_account_user mode only) may name the caller; an administrator may name any ' +
          'active user.',
        request: { body: CreateServicePrincipal },
        responses: {
          201: { description: 'Created', schema: CreatedServicePrincipal },
          400: {
            description:
              'Invalid mode, missing fields, a name of UUID form, or an association in client_credentials mode',
          },
          403: { description: 'The associated user is not yourself (or, for an administrator, not an active user)' },
          409: { description: 'A principal with this service_id exists' },
        },
        handler: async ({ body, req }) => {
          const { principal, secret } = await principals.create(
            userCaller(req),
            {
              name: body.name,
              description: body.description,
              mode: body.authentication_mode,
              ...(body.associated_user_id && { associatedUser: body.associated_user_id }),
              inheritPermissions: body.inherit_permissions,
            },
            clientInfo(req),
          );
          return { ...principal, client_secret: secret, message: 'Store this secret now: it will not be shown again' };
        },
      }),
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'listServicePrincipals',
        summary: 'The service principals you own',
        description: 'Never includes secrets. The total count is in the X-Total-Count header.',
        request: {
          query: z.object({
            page: z.coerce.number().int().min(1).default(1),
            page_size: z.coerce.number().int().min(1).max(100).default(20),
            authentication_mode: z.string().max(64).optional(),
          }),
        },
        responses: { 200: { description: 'Owned principals', schema: z.array(ServicePrincipal) } },
        handler: async ({ query, req, res }) => {
          const { items, total } = await principals.list(userCaller(req), {
            ...(query.authentication_mode && { mode: query.authentication_mode }),
            offset: (query.page - 1) * query.page_size,
            limit: query.page_size,
          });
          res.set('X-Total-Count', String(total));
          return items;
        },
      }),
      defineRoute({
        method: 'get',
        path: '/:service_id',
        operationId: 'getServicePrincipal',
        summary: 'One service principal',
        request: { params: idParams },
        responses: {
          200: { description: 'The principal', schema: ServicePrincipal },
          403: { description: 'Not the owner' },
          404: { description: 'No such principal' },
        },
        handler: ({ params, req }) => principals.get(userCaller(req), params.service_id),
      }),
      defineRoute({
        method: 'post',
        path: '/:service_id/rotate-secret',
        operationId: 'rotateServicePrincipalSecret',
        summary: 'Replace the client secret',
        description: 'The old secret stops working at once, or after grace_period_hours.',
        request: {
          params: idParams,
          body: z.object({ grace_period_hours: z.number().int().min(0).max(168).default(0) }),
        },
        responses: {
          200: { description: 'Rotated', schema: RotatedSecret },
          403: { description: 'Not the owner' },
          404: { description: 'No such principal' },
        },
        handler: async ({ params, body, req }) => ({
          service_id: params.service_id,
          client_secret: await principals.rotateSecret(
            userCaller(req),
            params.service_id,
            body.grace_period_hours,
            clientInfo(req),
          ),
          message:
            body.grace_period_hours > 0
              ? `Store this secret now; the previous one works for ${body.grace_period_hours} more hour(s)`
              : 'Store this secret now; the previous one no longer works',
        }),
      }),
      defineRoute({
        method: 'post',
        path: '/:service_id/associate-user',
        operationId: 'associateServicePrincipalUser',
        summary: 'Make the principal act for a user',
        description:
          'The principal becomes a service_account_user principal acting for the user. A caller may associate ' +
          'themselves; an administrator may associate any active user.',
        request: {
          params: idParams,
          query: z.object({
            user_id: z.string().min(1).max(300).describe('user:<name>'),
            inherit_permissions: z
              .enum(['true', 'false'])
              .default('true')
              .transform((v) => v === 'true'),
          }),
        },
        responses: {
          200: { description: 'Associated', schema: ServicePrincipal },
          400: { description: 'user_id is missing, or (for an administrator) names no user' },
          403: { description: 'Not the owner, or a user you may not associate' },
          404: { description: 'No such principal' },
        },
        handler: ({ params, query, req }) =>
          principals.associateUser(
            userCaller(req),
            params.service_id,
            query.user_id,
            query.inherit_permissions,
            clientInfo(req),
          ),
      }),
      defineRoute({
        method: 'delete',
        path: '/:service_id',
        operationId: 'deleteServicePrincipal',
        summary: 'Delete a service principal (irreversible)',
        request: { params: idParams },
        responses: {
          204: { description: 'Deleted' },
          403: { description: 'Not the owner' },
          404: { description: 'No such principal' },
        },
        handler: async ({ params, req }) => {
          await principals.delete(userCaller(req), params.service_id, clientInfo(req));
          return new Reply(204);
        },
      }),
    ],
  };

  const token: RouteGroup = {
    prefix: '/auth/token',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'clientCredentialsToken',
        summary: 'Client-credentials grant for service principals',
        description: 'client_id is the service_id. Credentials may also come as HTTP Basic authentication.',
        tags: ['Authentication'],
        access: 'public',
        request: {
          body: ClientCredentialsRequest,
          bodyContentTypes: ['application/x-www-form-urlencoded', 'application/json'],
        },
        responses: {
          200: { description: 'Access token', schema: ClientCredentialsToken },
          400: { description: 'Unsupported grant type or missing credentials' },
          401: { description: 'Invalid client credentials' },
        },
        handler: async ({ body, req, res }) => {
          if (body.grant_type !== 'client_credentials') {
            throw new BadRequestError('grant_type must be client_credentials', { code: CommonErrorCode.Validation });
          }
          const basic = basicCredentials(req.get('Authorization'));
          const id = basic?.id ?? body.client_id;
          const secret = basic?.secret ?? body.client_secret;
          if (!id || !secret)
            throw new BadRequestError('client_id and client_secret are required', { code: CommonErrorCode.Validation });
          res.set('Cache-Control', 'no-store');
          return principals.issueToken(id, secret, clientInfo(req));
        },
      }),
    ],
  };

  return [management, token];
}
