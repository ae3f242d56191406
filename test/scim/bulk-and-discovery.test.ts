import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import {
  BASE,
  BULK_REQUEST,
  BULK_RESPONSE,
  ENTERPRISE,
  GROUP,
  type Json,
  LIST,
  PATCH_OP,
  PUBLIC_URL,
  type ScimClient,
  scimError,
  startScim,
  USER,
} from './helpers.js';

const closing = closeAfterEach();
const setUp = async (env: Record<string, string> = {}) => closing(await startScim(env));

const bulk = (c: ScimClient, Operations: unknown[], extra: Record<string, unknown> = {}) =>
  c.request('POST', '/Bulk', { schemas: [BULK_REQUEST], ...extra, Operations });

describe('POST /scim/v2/Bulk', () => {
  it('runs each operation, resolving bulkId references made before or after them, in request order', async () => {
    const c = await setUp();
    const res = await bulk(c, [
      // A group naming a user that a later operation creates: it runs after that one.
      {
        method: 'POST',
        path: '/Groups',
        bulkId: 'tour',
        data: { schemas: [GROUP], displayName: 'Tour Guides', members: [{ type: 'User', value: 'bulkId:babs' }] },
      },
      { method: 'POST', path: '/Users', bulkId: 'babs', data: { schemas: [USER], userName: 'bjensen' } },
      {
        method: 'POST',
        path: '/Users',
        bulkId: 'jim',
        data: { schemas: [USER, ENTERPRISE], userName: 'jsmith', [ENTERPRISE]: { manager: { value: 'bulkId:babs' } } },
      },
      {
        method: 'PATCH',
        path: '/Users/bulkId:jim',
        data: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'Driver' }] },
      },
    ]);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const babs = (await c.app.services.users.getByUsername('bjensen'))!.id;
    const jim = (await c.app.services.users.getByUsername('jsmith'))!.id;
    const group = ((res.body.Operations as Json[])[0]!.location as string).split('/').at(-1)!;
    expect(res.body).toEqual({
      schemas: [BULK_RESPONSE],
      Operations: [
        { method: 'POST', bulkId: 'tour', location: `${BASE}/Groups/${group}`, status: '201' },
        { method: 'POST', bulkId: 'babs', location: `${BASE}/Users/${babs}`, status: '201' },
        { method: 'POST', bulkId: 'jim', location: `${BASE}/Users/${jim}`, status: '201' },
        { method: 'PATCH', location: `${BASE}/Users/${jim}`, status: '200' },
      ],
    });
    expect((await c.request('GET', `/Groups/${group}`)).body.members).toEqual([
      { value: babs, display: 'bjensen', $ref: `${BASE}/Users/${babs}`, type: 'User' },
    ]);
    const jimNow = (await c.request('GET', `/Users/${jim}`)).body;
    expect(jimNow.title).toBe('Driver');
    expect((jimNow[ENTERPRISE] as { manager: Json }).manager.value).toBe(babs);
    expect(await c.app.infrastructure.authz.check(`user:${babs}`, 'member', `group:${group}`)).toBe(true);
  });

  it('reports each failure with its SCIM error and goes on; failOnErrors stops after that many', async () => {
    const c = await setUp();
    await c.request('POST', '/Users', { schemas: [USER], userName: 'taken' });
    const operations = [
      { method: 'POST', path: '/Users', bulkId: 'a', data: { schemas: [USER], userName: 'taken' } },
      {
        method: 'POST',
        path: '/Groups',
        bulkId: 'g',
        data: { schemas: [GROUP], displayName: 'G', members: [{ value: 'bulkId:a' }] },
      },
      { method: 'DELETE', path: '/Users/00000000-0000-4000-8000-000000000000' },
      { method: 'POST', path: '/Users', bulkId: 'b', data: { schemas: [USER], userName: 'fresh' } },
      { method: 'GET', path: '/Users' },
      { method: 'POST', path: '/Users', data: { schemas: [USER], userName: 'no-bulk-id' } },
      { method: 'PUT', path: '/Widgets/1', data: {} },
      { method: 'PATCH', path: '/Users/bulkId:nobody', data: { schemas: [PATCH_OP], Operations: [] } },
      { method: 'PUT', path: '/Users', data: { schemas: [USER], userName: 'x' } },
      { method: 'POST', path: '/Users', bulkId: 'c' },
    ];
    const res = await bulk(c, operations);
    expect(res.status).toBe(200);
    const fresh = (await c.app.services.users.getByUsername('fresh'))!.id;
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(res.body.Operations).toEqual([
      {
        method: 'POST',
        bulkId: 'a',
        status: '409',
        response: scimError(409, 'userName taken is already taken', 'uniqueness'),
      },
      {
        method: 'POST',
        bulkId: 'g',
        status: '400',
        response: scimError(400, 'bulkId a names an operation that failed', 'invalidValue'),
      },
      { method: 'DELETE', status: '404', response: scimError(404, `User ${unknown} not found`, 'notFound') },
      { method: 'POST', bulkId: 'b', location: `${BASE}/Users/${fresh}`, status: '201' },
      {
        method: 'GET',
        status: '400',
        response: scimError(400, 'Operations[4].method must be POST, PUT, PATCH or DELETE', 'invalidValue'),
      },
      {
        method: 'POST',
        status: '400',
        response: scimError(400, 'Operations[5]: POST needs a bulkId', 'invalidSyntax'),
      },
      {
        method: 'PUT',
        status: '400',
        response: scimError(
          400,
          'path must be /Users, /Groups, /Users/{id} or /Groups/{id}, not /Widgets/1',
          'invalidValue',
        ),
      },
      {
        method: 'PATCH',
        status: '400',
        response: scimError(400, 'No POST operation has bulkId nobody', 'invalidValue'),
      },
      {
        method: 'PUT',
        status: '400',
        response: scimError(400, 'PUT targets one resource: /Users/{id}', 'invalidValue'),
      },
      {
        method: 'POST',
        bulkId: 'c',
        status: '400',
        response: scimError(400, 'Operations[9].data must be an object', 'invalidSyntax'),
      },
    ]);

    const stopped = await bulk(c, operations.slice(0, 4), { failOnErrors: 2 });
    expect((stopped.body.Operations as Json[]).map((o) => o.status)).toEqual(['409', '400']);
  });

  it('gives up on circular references (RFC 7644 §3.7.1) rather than guess', async () => {
    const c = await setUp();
    const res = await bulk(c, [
      {
        method: 'POST',
        path: '/Users',
        bulkId: 'x',
        data: { schemas: [USER, ENTERPRISE], userName: 'x', [ENTERPRISE]: { manager: { value: 'bulkId:y' } } },
      },
      {
        method: 'POST',
        path: '/Users',
        bulkId: 'y',
        data: { schemas: [USER, ENTERPRISE], userName: 'y', [ENTERPRISE]: { manager: { value: 'bulkId:x' } } },
      },
    ]);
    expect(res.body.Operations).toEqual([
      {
        method: 'POST',
        bulkId: 'x',
        status: '400',
        response: scimError(400, 'Circular bulkId references cannot be resolved', 'invalidValue'),
      },
      {
        method: 'POST',
        bulkId: 'y',
        status: '400',
        response: scimError(400, 'Circular bulkId references cannot be resolved', 'invalidValue'),
      },
    ]);
    expect(await c.app.services.users.getByUsername('x')).toBeUndefined();
  });

  it('refuses more than maxOperations (413 tooMany), a body over maxPayloadSize (413), and a bad envelope (400)', async () => {
    const c = await setUp({ BODY_LIMIT_BYTES: '65536' });
    const tooMany = await bulk(
      c,
      Array.from({ length: 1001 }, () => ({ method: 'DELETE', path: '/Users/x' })),
    );
    expect(tooMany.status).toBe(413);
    expect(tooMany.body).toEqual(
      scimError(413, 'A Bulk request may carry at most 1000 operations (maxOperations); this one has 1001', 'tooMany'),
    );
    const big = await bulk(c, [
      {
        method: 'POST',
        path: '/Users',
        bulkId: 'a',
        data: { schemas: [USER], userName: 'x', title: 'x'.repeat(70_000) },
      },
    ]);
    expect(big.status).toBe(413);
    expect(big.body).toEqual(scimError(413, 'Request body is too large'));
    expect((await c.request('POST', '/Bulk', { Operations: [] })).body).toEqual(
      scimError(400, `schemas must include ${BULK_REQUEST}`, 'invalidValue'),
    );
    expect((await c.request('POST', '/Bulk', { schemas: [BULK_REQUEST], Operations: {} })).body).toEqual(
      scimError(400, 'Operations must be an array', 'invalidValue'),
    );
    expect((await bulk(c, [], { failOnErrors: 0 })).body).toEqual(
      scimError(400, 'failOnErrors must be a positive integer', 'invalidValue'),
    );
    expect((await bulk(c, [])).body).toEqual({ schemas: [BULK_RESPONSE], Operations: [] });
  });
});

describe('discovery (RFC 7644 §4)', () => {
  it('/ServiceProviderConfig advertises patch, bulk limits, filter, sort and password change', async () => {
    const c = await setUp();
    const res = await c.request('GET', '/ServiceProviderConfig');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(res.body).toEqual({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      documentationUri: `${PUBLIC_URL}/docs`,
      patch: { supported: true },
      bulk: { supported: true, maxOperations: 1000, maxPayloadSize: 1048576 },
      filter: { supported: true, maxResults: 1000 },
      changePassword: { supported: true },
      sort: { supported: true },
      etag: { supported: false },
      authenticationSchemes: [
        {
          type: 'oauthbearertoken',
          name: 'OAuth Bearer Token',
          description:
            'An access token of an administrator, or of a service principal granted the provisioner relation on ' +
            'system:global (POST /auth/token with client credentials).',
          specUri: 'https://www.rfc-editor.org/info/rfc6750',
          documentationUri: `${PUBLIC_URL}/docs`,
        },
      ],
      meta: { resourceType: 'ServiceProviderConfig', location: `${BASE}/ServiceProviderConfig` },
    });
  });

  it('/ResourceTypes lists User (with the enterprise extension) and Group; one by name; 404 otherwise', async () => {
    const c = await setUp();
    const user = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'User Account',
      schema: USER,
      schemaExtensions: [{ schema: ENTERPRISE, required: false }],
      meta: { resourceType: 'ResourceType', location: `${BASE}/ResourceTypes/User` },
    };
    const group = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'Group',
      schema: GROUP,
      meta: { resourceType: 'ResourceType', location: `${BASE}/ResourceTypes/Group` },
    };
    expect((await c.request('GET', '/ResourceTypes')).body).toEqual({
      schemas: [LIST],
      totalResults: 2,
      startIndex: 1,
      itemsPerPage: 2,
      Resources: [user, group],
    });
    expect((await c.request('GET', '/ResourceTypes/user')).body).toEqual(user);
    expect((await c.request('GET', '/ResourceTypes/Widget')).body).toEqual(
      scimError(404, 'No resource type Widget', 'notFound'),
    );
  });

  it('/Schemas describes every attribute with its characteristics; one schema by URN', async () => {
    const c = await setUp();
    const list = await c.request('GET', '/Schemas');
    expect(list.body).toMatchObject({ schemas: [LIST], totalResults: 3, itemsPerPage: 3 });
    const user = await c.request('GET', `/Schemas/${USER}`);
    expect(user.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
      id: USER,
      name: 'User',
      meta: { resourceType: 'Schema', location: `${BASE}/Schemas/${USER}` },
    });
    const attribute = (name: string) => (user.body.attributes as { name: string }[]).find((a) => a.name === name);
    expect(attribute('userName')).toEqual({
      name: 'userName',
      type: 'string',
      multiValued: false,
      description: 'Unique identifier for the User, used to sign in. REQUIRED.',
      required: true,
      caseExact: false,
      mutability: 'readWrite',
      returned: 'default',
      uniqueness: 'server',
    });
    expect(attribute('password')).toMatchObject({ mutability: 'writeOnly', returned: 'never' });
    expect(attribute('groups')).toMatchObject({ mutability: 'readOnly', multiValued: true });
    expect((await c.request('GET', `/Schemas/${ENTERPRISE.toUpperCase()}`)).body.id).toBe(ENTERPRISE);
    expect((await c.request('GET', '/Schemas/urn:nope')).body).toEqual(
      scimError(404, 'No schema urn:nope', 'notFound'),
    );
  });

  it('answers unknown SCIM paths with a SCIM 404', async () => {
    const c = await setUp();
    const res = await c.request('GET', '/Me');
    expect(res.status).toBe(404);
    expect(res.body).toEqual(scimError(404, 'No route for GET /scim/v2/Me', 'notFound'));
  });
});
