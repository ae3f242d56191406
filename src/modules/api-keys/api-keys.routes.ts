import type { Request } from 'express';
import { z } from 'zod';
import { BadRequestError, CommonErrorCode } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import { clientInfo } from '../../http/request-context.js';
import { asUser } from '../../ports/caller.js';
import { type ApiKeysService, DEFAULT_EXPIRES_DAYS, MAX_EXPIRES_DAYS, MAX_KEYS_PER_USER } from './api-keys.service.js';

const TAGS = ['API keys'];

const ApiKey = z
  .object({
    key_id: z.string().describe('Stable across rotation'),
    name: z.string(),
    created: z.iso.datetime(),
    expires_at: z.iso.datetime(),
    last_used: z.iso.datetime().nullable().describe('null when never used'),
  })
  .meta({ id: 'ApiKey' });

const CreatedApiKey = ApiKey.omit({ last_used: true })
  .extend({ api_key: z.string().describe('The key, shown only in this response: ak_live_…'), message: z.string() })
  .meta({ id: 'CreatedApiKey' });

const RotatedApiKey = z
  .object({
    key_id: z.string(),
    new_api_key: z.string().describe('The new key, shown only in this response'),
    message: z.string(),
  })
  .meta({ id: 'RotatedApiKey' });

const CreateApiKey = z
  .object({
    name: z.string().trim().min(1).max(100),
    expires_days: z.number().int().min(1).max(MAX_EXPIRES_DAYS).default(DEFAULT_EXPIRES_DAYS),
  })
  .meta({ id: 'CreateApiKey' });

const KeyExchange = z
  .object({ access_token: z.string(), expires_in: z.number().int(), user_id: z.string(), username: z.string() })
  .meta({ id: 'ApiKeyExchange' });

const keyParams = z.object({ key_id: z.string().min(1).max(64) });

/** API keys belong to people; a service principal has its client secret instead. */
function userCaller(req: Request) {
  return asUser(callerOf(req), 'API keys belong to users');
}

export function apiKeyRoutes(keys: ApiKeysService): RouteGroup {
  return {
    prefix: '/api/v1/api-keys',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/validate',
        operationId: 'validateApiKey',
        summary: 'Exchange an API key for a short-lived access token (for the API gateway)',
        access: 'public',
        internal: true,
        responses: {
          200: { description: 'The key is valid', schema: KeyExchange },
          400: { description: 'X-API-Key header missing' },
          401: { description: 'Invalid or expired key' },
        },
        handler: async ({ req }) => {
          const key = req.get('X-API-Key');
          if (!key) throw new BadRequestError('The X-API-Key header is required', { code: CommonErrorCode.Validation });
          return keys.exchange(key);
        },
      }),
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description: `At most ${MAX_KEYS_PER_USER} unexpired keys per user. The key is returned once; only its hash is kept.`,
        request: { body: CreateApiKey },
        responses: {
          201: { description: 'Created', schema: CreatedApiKey },
          400: { description: 'Invalid input, or the key limit is reached' },
        },
        handler: async ({ body, req }) => {
          const created = await keys.create(
            userCaller(req).userId,
            { name: body.name, expiresDays: body.expires_days },
            clientInfo(req),
          );
          const { last_used: _, ...rest } = created;
          return { ...rest, message: 'Store this key now: it will not be shown again' };
        },
      }),
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'listApiKeys',
        summary: 'List your API keys (never their values)',
        request: {
          query: z.object({
            include_expired: z
              .enum(['true', 'false'])
              .default('false')
              .transform((v) => v === 'true'),
          }),
        },
        responses: { 200: { description: 'Your keys', schema: z.array(ApiKey) } },
        handler: ({ query, req }) => keys.list(userCaller(req).userId, query.include_expired),
      }),
      defineRoute({
        method: 'post',
        path: '/:key_id/rotate',
        operationId: 'rotateApiKey',
        summary: 'Replace the value of an API key',
        description: 'Same key_id, new value; the old value stops working at once.',
        request: { params: keyParams },
        responses: {
          200: { description: 'Rotated', schema: RotatedApiKey },
          404: { description: 'No such key of yours' },
        },
        handler: async ({ params, req }) => ({
          ...(await keys.rotate(userCaller(req).userId, params.key_id, clientInfo(req))),
          message: 'Store this key now: it will not be shown again; the previous value no longer works',
        }),
      }),
      defineRoute({
        method: 'delete',
        path: '/:key_id',
        operationId: 'deleteApiKey',
        summary: 'Delete an API key',
        request: { params: keyParams },
        responses: { 204: { description: 'Deleted' }, 404: { description: 'No such key of yours' } },
        handler: async ({ params, req }) => {
          await keys.delete(userCaller(req).userId, params.key_id, clientInfo(req));
          return new Reply(204);
        },
      }),
    ],
  };
}
