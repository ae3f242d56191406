import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parse as parseCookies } from 'cookie';
import type { Request } from 'express';
import { z } from 'zod';
import { BadRequestError, CommonErrorCode } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import { CALLBACK_PATH, CONNECTIONS_PREFIX, type ConnectionOperations } from './connections.operations.js';

const TAGS = ['Connections'];
/** Ties a sign-in to the browser that started it: another browser cannot finish it with its own code. */
const BINDING_COOKIE = 'connection_sign_in';

const Transport = z.enum(['streamable_http', 'sse', 'stdio']);
const Approval = z.enum(['destructive', 'writes', 'never']);
const text = (max: number) => z.string().trim().min(1).max(max);

const Auth = z.object({
  kind: z.enum(['none', 'bearer', 'header', 'oauth']),
  header_name: z.string().max(100).optional(),
  secret: z.string().min(1).max(4_096).optional().describe('Write-only: never returned'),
  scopes: z.string().max(1_000).optional(),
});

const CreateConnection = z
  .object({
    name: text(100),
    slug: z.string().max(24).optional(),
    scope: z.enum(['personal', 'shared']).default('personal'),
    transport: Transport,
    url: z.string().max(2_048).optional(),
    command: z.string().max(40).optional(),
    auth: Auth.default({ kind: 'none' }),
    gateway: z.boolean().optional(),
    approval: Approval.optional(),
  })
  .strict()
  .meta({ id: 'CreateConnection' });

const UpdateConnection = z
  .object({
    name: text(100).optional(),
    slug: z.string().max(24).optional(),
    url: z.string().max(2_048).optional(),
    command: z.string().max(40).optional(),
    auth: Auth.partial().optional(),
    gateway: z.boolean().optional(),
    approval: Approval.optional(),
  })
  .strict()
  .meta({ id: 'UpdateConnection' });

const Connection = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string().describe('Its tools are named <slug>__<tool>'),
    scope: z.enum(['personal', 'shared']),
    owner_id: z.string().nullable(),
    transport: Transport,
    url: z.string().nullable(),
    command: z.string().nullable(),
    auth: z.object({
      kind: z.enum(['none', 'bearer', 'header', 'oauth']),
      header_name: z.string().nullable(),
      secret_set: z.boolean(),
      scopes: z.string().nullable(),
    }),
    gateway: z.boolean(),
    approval: Approval,
    account: z.object({
      status: z.enum(['not_needed', 'connected', 'not_connected']),
      connected_at: z.string().nullable(),
    }),
    can_edit: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Connection' });

const ConnectionTool = z
  .object({
    name: z.string(),
    upstream_name: z.string(),
    title: z.string().nullable(),
    description: z.string(),
    input_schema: z.record(z.string(), z.unknown()),
    annotations: z.record(z.string(), z.unknown()),
    status: z.enum(['approved', 'held']),
    asks_first: z.boolean(),
    changed: z
      .object({ description: z.string(), input_schema: z.record(z.string(), z.unknown()) })
      .nullable()
      .optional(),
  })
  .meta({ id: 'ConnectionTool' });

const TestResult = z
  .object({
    ok: z.boolean(),
    protocol_version: z.string().optional(),
    server: z.object({ name: z.string(), version: z.string() }).optional(),
    tools: z.number().int().optional(),
    latency_ms: z.number().int().optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    connect_url: z.string().optional(),
  })
  .meta({ id: 'ConnectionTest' });

const idParams = z.object({ id: z.uuid() });
const approvalParams = z.object({ approval_id: z.uuid() });

const ApprovalRequest = z
  .object({
    approval_id: z.string(),
    tool: z.string(),
    server: z.string(),
    arguments: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'ToolCallApproval' });

/** The connections REST API, served on every listener (the web UIs call it on their own origin). */
export function connectionRoutes(connections: ConnectionOperations): RouteGroup {
  return {
    prefix: CONNECTIONS_PREFIX,
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'listConnections',
        summary: 'The MCP servers you may use: yours, and the shared ones',
        responses: { 200: { description: 'Connections', schema: z.array(Connection) } },
        handler: ({ req }) => connections.service.list(callerOf(req)),
      }),
      defineRoute({
        method: 'get',
        path: '/commands',
        operationId: 'listConnectionCommands',
        summary: 'The stdio commands an administrator may connect (none for others)',
        responses: {
          200: {
            description: 'Commands',
            schema: z.array(z.object({ name: z.string(), description: z.string() })),
          },
        },
        handler: ({ req }) => connections.service.commands(callerOf(req)),
      }),
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'createConnection',
        summary: 'Register an MCP server',
        description:
          'Personal for yourself, or shared (administrators). Static secrets are sealed and never returned. stdio ' +
          'servers are administrators\u2019 and run only allow-listed commands.',
        request: { body: CreateConnection },
        responses: {
          201: { description: 'Registered', schema: Connection },
          400: { description: 'Invalid input (an address the service may not reach included)' },
          403: { description: 'Only administrators do that' },
          409: { description: 'The slug is taken' },
        },
        handler: ({ body, req }) => connections.service.create(callerOf(req), body),
      }),
      defineRoute({
        method: 'get',
        path: '/approvals/:approval_id',
        operationId: 'getToolCallApproval',
        summary: 'A call of a connected tool that waits for your approval',
        request: { params: approvalParams },
        responses: {
          200: { description: 'The call', schema: ApprovalRequest },
          404: { description: 'Not found or expired' },
        },
        handler: ({ params, req }) => connections.approvalRequest(callerOf(req), params.approval_id),
      }),
      defineRoute({
        method: 'post',
        path: '/approvals/:approval_id',
        operationId: 'decideToolCallApproval',
        summary: 'Approve or decline a call of a connected tool',
        description: 'Approved, the same call (same tool and arguments) by you runs once, within 15 minutes.',
        request: { params: approvalParams, body: z.object({ approve: z.boolean() }).strict() },
        responses: {
          200: { description: 'Decided', schema: ApprovalRequest.extend({ approved: z.boolean() }) },
          404: { description: 'Not found or expired' },
        },
        handler: ({ params, body, req }) => connections.decide(callerOf(req), params.approval_id, body.approve),
      }),
      defineRoute({
        method: 'get',
        path: '/:id',
        operationId: 'getConnection',
        summary: 'One connection',
        request: { params: idParams },
        responses: { 200: { description: 'The connection', schema: Connection }, 404: { description: 'Not found' } },
        handler: ({ params, req }) => connections.service.get(callerOf(req), params.id),
      }),
      defineRoute({
        method: 'patch',
        path: '/:id',
        operationId: 'updateConnection',
        summary: 'Change a connection (a new secret replaces the old; omit it to keep it)',
        request: { params: idParams, body: UpdateConnection },
        responses: {
          200: { description: 'Changed', schema: Connection },
          400: { description: 'Invalid input' },
          403: { description: 'You may use it but not change it' },
          404: { description: 'Not found' },
          409: { description: 'The slug is taken' },
        },
        handler: ({ params, body, req }) => connections.service.update(callerOf(req), params.id, body),
      }),
      defineRoute({
        method: 'delete',
        path: '/:id',
        operationId: 'deleteConnection',
        summary: 'Remove a connection, with every account at it and its pinned tools',
        request: { params: idParams },
        responses: {
          204: { description: 'Removed' },
          403: { description: 'Not yours' },
          404: { description: 'Not found' },
        },
        handler: async ({ params, req }) => {
          await connections.service.delete(callerOf(req), params.id);
          return new Reply(204);
        },
      }),
      defineRoute({
        method: 'post',
        path: '/:id/test',
        operationId: 'testConnection',
        summary: 'Connect as you and list the tools: what the server is, and whether it answers',
        request: { params: idParams },
        // 404: a connection the caller may not use is not found (`usableOne`), as on every route of one connection.
        responses: {
          200: { description: 'The outcome (ok or not)', schema: TestResult },
          404: { description: 'Not found' },
        },
        handler: ({ params, req }) => connections.test(callerOf(req), params.id),
      }),
      defineRoute({
        method: 'get',
        path: '/:id/tools',
        operationId: 'listConnectionTools',
        summary: 'The tools of a connection, approved or held',
        request: { params: idParams },
        responses: {
          200: { description: 'Tools', schema: z.array(ConnectionTool) },
          404: { description: 'Not found' },
        },
        handler: ({ params, req }) => connections.tools(callerOf(req), params.id),
      }),
      defineRoute({
        method: 'post',
        path: '/:id/tools/:tool/approve',
        operationId: 'approveConnectionTool',
        summary: 'Approve the definition a tool has now (after it changed upstream, or appeared)',
        request: { params: z.object({ id: z.uuid(), tool: z.string().min(1).max(200) }) },
        responses: {
          200: { description: 'Approved', schema: ConnectionTool },
          403: { description: 'Only its owner (an administrator for a shared one) approves' },
          404: { description: 'Not found' },
        },
        handler: ({ params, req }) => connections.approve(callerOf(req), params.id, params.tool),
      }),
      defineRoute({
        method: 'post',
        path: '/:id/account',
        operationId: 'connectConnectionAccount',
        summary: 'Start connecting your account at an OAuth-protected server: where to send your browser',
        request: {
          params: idParams,
          body: z
            .object({ return_to: z.string().max(2_048).optional() })
            .strict()
            .default({}),
        },
        responses: {
          200: { description: 'The sign-in URL', schema: z.object({ authorization_url: z.string() }) },
          400: { description: 'The connection does not use OAuth' },
          404: { description: 'Not found' },
        },
        handler: async ({ params, body, req, res }) => {
          const binding = randomBytes(24).toString('base64url');
          const url = await connections.connect(callerOf(req), params.id, {
            returnTo: sameOrigin(req, body.return_to),
            binding: hashOf(binding),
          });
          res.cookie(BINDING_COOKIE, binding, {
            httpOnly: true,
            sameSite: 'lax',
            secure: req.secure,
            path: `${CONNECTIONS_PREFIX}${CALLBACK_PATH}`,
            maxAge: 10 * 60_000,
          });
          return { authorization_url: url };
        },
      }),
      defineRoute({
        method: 'delete',
        path: '/:id/account',
        operationId: 'disconnectConnectionAccount',
        summary: 'Disconnect your account (the upstream token is revoked where the server offers it)',
        request: { params: idParams },
        responses: { 204: { description: 'Disconnected' }, 404: { description: 'Not found' } },
        handler: async ({ params, req }) => {
          await connections.disconnect(callerOf(req), params.id);
          return new Reply(204);
        },
      }),
      defineRoute({
        method: 'get',
        path: CALLBACK_PATH,
        operationId: 'finishConnectionAccount',
        summary: 'Finish connecting an account (the upstream\u2019s authorization server redirects the browser here)',
        access: 'public',
        request: {
          query: z.object({
            state: z.string().max(200).optional(),
            code: z.string().max(4_096).optional(),
            iss: z.string().max(2_048).optional(),
            error: z.string().max(200).optional(),
          }),
        },
        responses: {
          200: { description: 'Done, with nowhere to go back to: whether the account is connected' },
          302: { description: 'Back to the page that started it' },
          400: { description: 'Unknown sign-in' },
        },
        handler: async ({ query, req, res }) => {
          const binding = cookieOf(req, BINDING_COOKIE);
          res.clearCookie(BINDING_COOKIE, { path: `${CONNECTIONS_PREFIX}${CALLBACK_PATH}` });
          if (!query.state) throw new BadRequestError('state is required', { code: CommonErrorCode.BadRequest });
          const outcome = await connections.finish({
            state: query.state,
            ...(query.code !== undefined && { code: query.code }),
            ...(query.iss !== undefined && { iss: query.iss }),
            ...(query.error !== undefined && { error: query.error }),
            matches: (expected) => binding !== undefined && equal(hashOf(binding), expected),
          });
          res.set('Cache-Control', 'no-store');
          if (outcome.returnTo) return new Reply(302, undefined, { Location: outcome.returnTo });
          return outcome.ok
            ? { message: 'Connected. You may close this window.', connection_id: outcome.connectionId }
            : { message: `Not connected: ${outcome.error}`, connection_id: outcome.connectionId };
        },
      }),
    ],
  };
}

/** A URL to come back to, if it is on the origin the request came to (no open redirect). */
function sameOrigin(req: Request, returnTo: string | undefined): string | undefined {
  if (!returnTo) return undefined;
  try {
    const url = new URL(returnTo, `${req.protocol}://${req.get('host')}`);
    return url.origin === `${req.protocol}://${req.get('host')}` ? url.toString() : undefined;
  } catch {
    return undefined;
  }
}

function cookieOf(req: Request, name: string): string | undefined {
  return parseCookies(req.get('cookie') ?? '')[name];
}

const hashOf = (value: string): string => createHash('sha256').update(value).digest('base64url');

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
