import type { Request } from 'express';
import { z } from 'zod';
import { BadRequestError, CommonErrorCode } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { type RouteGroup, defineRoute } from '../../http/route.js';
import { clientInfo } from '../../http/request-context.js';
import { clearSessionCookie } from '../auth/index.js';
import { asUser } from '../../ports/caller.js';
import { dataExportCsv } from './csv.js';
import type { DataSubjectService } from './data-subject.service.js';
import { CONSENT_TYPES } from './data-subject.tables.js';
import type { ErasureService } from './erasure.service.js';

const TAGS = ['Data-subject rights'];
/** Serialized preferences are bounded: they are stored with every account and exported whole. */
const MAX_PREFERENCES_BYTES = 16 * 1024;
const MAX_NAME_CHARACTERS = 100;

const DataExport = z
  .object({
    export_id: z.string(),
    user_id: z.string(),
    username: z.string(),
    email: z.string().nullable(),
    export_timestamp: z.iso.datetime(),
    profile: z.object({
      user_id: z.string(),
      username: z.string(),
      email: z.string().nullable(),
      name: z.string().nullable(),
      created_at: z.iso.datetime(),
      preferences: z.record(z.string(), z.unknown()),
    }),
    sessions: z.array(
      z.object({
        session_id: z.string(),
        created_at: z.iso.datetime(),
        last_accessed: z.iso.datetime(),
        ip_address: z.string().nullable(),
      }),
    ),
    conversations: z.array(
      z.object({
        conversation_id: z.string(),
        created_at: z.iso.datetime(),
        message_count: z.number().int(),
        last_message_at: z.iso.datetime().nullable(),
      }),
    ),
    playground_sessions: z.array(
      z.object({
        session_id: z.string(),
        name: z.string(),
        created_at: z.iso.datetime(),
        updated_at: z.iso.datetime(),
        metadata: z.record(z.string(), z.unknown()),
        messages: z.array(z.record(z.string(), z.unknown())),
        traces: z.array(z.record(z.string(), z.unknown())),
        logs: z.array(z.record(z.string(), z.unknown())),
      }),
    ),
    workflows: z.array(
      z.object({
        workflow_id: z.string(),
        name: z.string(),
        version: z.number().int(),
        version_count: z.number().int(),
        created_at: z.iso.datetime(),
        updated_at: z.iso.datetime(),
        nodes: z.array(z.record(z.string(), z.unknown())),
        edges: z.array(z.record(z.string(), z.unknown())),
      }),
    ),
    oauth_grants: z.array(
      z.object({
        grant_id: z.string(),
        client_id: z.string(),
        client_name: z.string(),
        client_uri: z.string().nullable(),
        redirect_uris: z.array(z.string()),
        scope: z.string(),
        resource: z.string(),
        created_at: z.iso.datetime(),
        last_used_at: z.iso.datetime().nullable(),
      }),
    ),
    mcp_tasks: z.array(
      z.object({
        task_id: z.string(),
        tool: z.string(),
        status: z.enum(['working', 'input_required', 'completed', 'failed', 'cancelled']),
        status_message: z.string().nullable(),
        created_at: z.iso.datetime(),
        updated_at: z.iso.datetime(),
        expires_at: z.iso.datetime(),
        result: z.record(z.string(), z.unknown()).nullable(),
        error: z.record(z.string(), z.unknown()).nullable(),
      }),
    ),
    mcp_connections: z.array(
      z.object({
        connection_id: z.string(),
        name: z.string(),
        scope: z.enum(['personal', 'shared']),
        transport: z.string(),
        url: z.string().nullable(),
        auth_kind: z.string(),
        created_at: z.iso.datetime().nullable(),
        account_connected_at: z.iso.datetime().nullable(),
      }),
    ),
    consents: z.array(
      z.object({
        consent_id: z.string(),
        consent_type: z.enum(CONSENT_TYPES),
        granted: z.boolean(),
        timestamp: z.iso.datetime(),
        ip_address: z.string().nullable(),
      }),
    ),
    audit_log: z.array(
      z.object({
        event_id: z.string(),
        event_type: z.string(),
        timestamp: z.iso.datetime(),
        ip_address: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'DataExport' });

const ProfileUpdate = z
  .object({
    name: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .refine((name) => [...name].length <= MAX_NAME_CHARACTERS, `must be at most ${MAX_NAME_CHARACTERS} characters`)
      .refine((name) => !/\p{Cc}/u.test(name), 'must not contain control characters')
      .describe(`1–${MAX_NAME_CHARACTERS} characters`),
    email: z.email().max(254),
    preferences: z
      .record(z.string().min(1).max(100), z.unknown())
      .refine(
        (prefs) => Buffer.byteLength(JSON.stringify(prefs)) <= MAX_PREFERENCES_BYTES,
        `must be at most ${MAX_PREFERENCES_BYTES} bytes as JSON`,
      )
      .describe('Replaces the stored preferences'),
  })
  .partial()
  .strict()
  .meta({ id: 'ProfileUpdate' });

const UpdatedProfile = z
  .object({
    user_id: z.string(),
    username: z.string(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    preferences: z.record(z.string(), z.unknown()),
    updated_at: z.iso.datetime(),
    storage_note: z.string(),
  })
  .meta({ id: 'ProfileUpdateResponse' });

const ConsentEntry = z
  .object({
    granted: z.boolean(),
    timestamp: z.iso.datetime(),
    ip_address: z.string().nullable(),
    user_agent: z.string().nullable(),
  })
  .meta({ id: 'ConsentEntry' });

const ConsentState = z
  .object({
    user_id: z.string(),
    consents: z
      .partialRecord(z.enum(CONSENT_TYPES), ConsentEntry)
      .describe('The decision in force per consent type; a type never decided on is not granted'),
  })
  .meta({ id: 'ConsentState' });

const ConsentRequest = z
  .object({ consent_type: z.enum(CONSENT_TYPES), granted: z.boolean() })
  .meta({ id: 'ConsentRequest' });

const DeletionResult = z
  .object({
    message: z.string(),
    deletion_timestamp: z.iso.datetime(),
    deleted_items: z
      .record(z.string(), z.number().int())
      .describe('Per erasure step: sessions, conversations, preferences, authorization_tuples, consents, …'),
    anonymized_items: z.record(z.string(), z.number().int()).describe('audit_logs'),
    audit_record_id: z.string(),
  })
  .meta({ id: 'DeletionResult' });

/** Data-subject rights are a person's: a service principal has no account data of its own here. */
function personOf(req: Request) {
  return asUser(callerOf(req), 'Data-subject rights belong to users');
}

/** `2026-06-01T12:00:00.000Z` → `20260601T120000Z`: a file name every system accepts. */
const fileStamp = (iso: string) => iso.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');

export function dataSubjectRoutes(deps: { dataSubject: DataSubjectService; erasure: ErasureService }): RouteGroup {
  const { dataSubject, erasure } = deps;
  return {
    prefix: '/api/v1/users',
    area: 'data-subject',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/me/data',
        operationId: 'getMyData',
        summary: 'Everything the service keeps about you (right of access)',
        responses: { 200: { description: 'Your data', schema: DataExport } },
        handler: ({ req }) => dataSubject.exportData(personOf(req).userId),
      }),
      defineRoute({
        method: 'get',
        path: '/me/export',
        operationId: 'exportMyData',
        summary: 'Download your data as a file (right to data portability)',
        description:
          'The same data as GET /me/data: `format=json` is the DataExport document; `format=csv` has the ' +
          'columns section, record, field, value (one row per field; cells a spreadsheet would run as a formula ' +
          'start with an apostrophe). Every download is recorded in the audit log.',
        request: { query: z.object({ format: z.enum(['json', 'csv']).default('json') }) },
        responses: {
          200: { description: 'The file (application/json or text/csv), as an attachment', schema: DataExport },
          422: { description: 'Unsupported format' },
        },
        handler: async ({ query, req, res }) => {
          const caller = personOf(req);
          const data = await dataSubject.exportData(caller.userId);
          const body = query.format === 'csv' ? dataExportCsv(data) : `${JSON.stringify(data, null, 2)}\n`;
          await dataSubject.recordExport(caller.userId, query.format, clientInfo(req));
          res
            .status(200)
            .set({
              'Content-Type': query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
              'Content-Disposition': `attachment; filename="data-export-${fileStamp(data.export_timestamp)}.${query.format}"`,
              'Cache-Control': 'no-store',
              'X-Content-Type-Options': 'nosniff',
            })
            .send(body);
          return undefined;
        },
      }),
      defineRoute({
        method: 'patch',
        path: '/me',
        operationId: 'updateMyProfile',
        summary: 'Correct your profile (right to rectification)',
        description: 'Name, email and preferences; each optional. A changed email is unverified until confirmed.',
        request: { body: ProfileUpdate },
        responses: {
          200: { description: 'The profile as stored now', schema: UpdatedProfile },
          409: { description: 'The email address belongs to another account' },
          422: { description: 'Invalid field' },
        },
        handler: async ({ body, req }) =>
          dataSubject.updateProfile(
            personOf(req).userId,
            {
              ...(body.name !== undefined && { name: body.name }),
              ...(body.email !== undefined && { email: body.email }),
              ...(body.preferences !== undefined && { preferences: body.preferences }),
            },
            clientInfo(req),
          ),
      }),
      defineRoute({
        method: 'delete',
        path: '/me',
        operationId: 'eraseMe',
        summary: 'Erase your account and personal data (right to erasure)',
        description:
          'Irreversible. Removes the profile, sessions, refresh tokens, API keys, owned service principals, ' +
          'conversations, preferences, authorization tuples and consents; audit-log entries are kept with your id ' +
          'replaced by a keyed hash. A failure part-way answers 500 naming the step; repeating the request ' +
          'completes the erasure.',
        request: {
          query: z.object({ confirm: z.string().max(16).optional().describe('Must be true') }),
        },
        responses: {
          200: { description: 'Erased', schema: DeletionResult },
          400: { description: 'confirm=true is missing' },
          500: { description: 'The erasure stopped part-way; the detail names the step. Repeat the request.' },
        },
        handler: async ({ query, req, res }) => {
          const caller = personOf(req);
          if (query.confirm?.toLowerCase() !== 'true') {
            throw new BadRequestError('Erasure is irreversible: confirm it with the query parameter confirm=true', {
              code: CommonErrorCode.Validation,
            });
          }
          const result = await erasure.erase(caller.userId);
          clearSessionCookie(res); // its session is gone; the browser need not keep sending it
          return result;
        },
      }),
      defineRoute({
        method: 'post',
        path: '/me/consent',
        operationId: 'recordMyConsent',
        summary: 'Grant or withdraw a consent',
        description: 'Every decision is kept, with its time, address and user agent; the latest per type applies.',
        request: { body: ConsentRequest },
        responses: {
          200: { description: 'Your consents now', schema: ConsentState },
          422: { description: 'Unknown consent_type or missing field' },
        },
        handler: async ({ body, req }) =>
          dataSubject.recordConsent(personOf(req).userId, body.consent_type, body.granted, clientInfo(req)),
      }),
      defineRoute({
        method: 'get',
        path: '/me/consent',
        operationId: 'getMyConsents',
        summary: 'Your consents',
        responses: { 200: { description: 'Your consents', schema: ConsentState } },
        handler: ({ req }) => dataSubject.consents(personOf(req).userId),
      }),
    ],
  };
}
