import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import {
  BASE,
  BJENSEN_WORK_ADDRESS,
  createUser,
  ENTERPRISE,
  GROUP,
  idOf,
  type Json,
  LIST,
  login,
  PASSWORD,
  PATCH_OP,
  type ScimClient,
  scimError,
  scimRequest,
  SEARCH_REQUEST,
  startScim,
  USER,
} from './helpers.js';

const closing = closeAfterEach();
const setUp = async (): Promise<ScimClient> => closing(await startScim());

const T0 = '2026-06-01T12:00:00.000Z';
const SCIM_JSON = /^application\/scim\+json/;

/** Babs Jensen's emails, phone and address, which the service stores as sent. */
const BJENSEN_CONTACT = {
  emails: [
    { value: 'bjensen@example.com', type: 'work', primary: true },
    { value: 'babs@jensen.org', type: 'home' },
  ],
  phoneNumbers: [{ value: '555-555-8377', type: 'work' }],
  addresses: [BJENSEN_WORK_ADDRESS],
};

function bjensen(adminId: string) {
  return {
    schemas: [USER, ENTERPRISE],
    externalId: 'ext-701984',
    userName: 'BJensen@Example.com',
    name: { givenName: 'Barbara', familyName: 'Jensen', honorificPrefix: 'Ms.' },
    displayName: 'Babs Jensen',
    title: 'Tour Guide',
    active: true,
    password: PASSWORD,
    ...BJENSEN_CONTACT,
    [ENTERPRISE]: { employeeNumber: '701984', department: 'Tour Operations', manager: { value: adminId } },
    // Read-only attributes a client sends are ignored (RFC 7643 §2.2).
    id: 'chosen-by-client',
    groups: [{ value: 'ignored' }],
    meta: { resourceType: 'User' },
  };
}

/** A started app in which Babs Jensen, managed by the administrator, has just been created. */
async function setUpWithBjensen() {
  const c = await setUp();
  const admin = await adminId(c);
  return { c, admin, id: idOf(await c.request('POST', '/Users', bjensen(admin))) };
}

function bjensenAsStored(id: string, adminId: string, at = T0) {
  return {
    schemas: [USER, ENTERPRISE],
    id,
    externalId: 'ext-701984',
    userName: 'BJensen@Example.com',
    name: { formatted: 'Barbara Jensen', familyName: 'Jensen', givenName: 'Barbara', honorificPrefix: 'Ms.' },
    displayName: 'Babs Jensen',
    title: 'Tour Guide',
    active: true,
    ...BJENSEN_CONTACT,
    [ENTERPRISE]: {
      employeeNumber: '701984',
      department: 'Tour Operations',
      manager: { value: adminId, $ref: `${BASE}/Users/${adminId}`, displayName: 'admin' },
    },
    meta: { resourceType: 'User', created: T0, lastModified: at, location: `${BASE}/Users/${id}` },
  };
}

async function adminId(c: ScimClient): Promise<string> {
  return (await c.app.services.users.getByUsername('admin'))!.id;
}

async function provision(c: ScimClient, userName: string, extra: Record<string, unknown> = {}) {
  const res = await c.request('POST', '/Users', { schemas: [USER], userName, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string } & Record<string, unknown>;
}

describe('POST /scim/v2/Users', () => {
  it('creates a local user: 201, Location, meta, and the password is write-only but signs in', async () => {
    const c = await setUp();
    const admin = await adminId(c);
    const res = await c.request('POST', '/Users', bjensen(admin));
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(SCIM_JSON);
    const id = res.body.id as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('location')).toBe(`${BASE}/Users/${id}`);
    expect(res.body).toEqual(bjensenAsStored(id, admin));
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD);

    // A local user: signs in by userName (any case) or by the primary email, with the SCIM password.
    expect(
      (await call(c.app, 'POST', '/auth/login', { body: { username: 'bjensen@example.COM', password: PASSWORD } }))
        .status,
    ).toBe(200);
    const user = await c.app.services.users.get(id);
    expect(user).toMatchObject({
      username: 'BJensen@Example.com',
      email: 'bjensen@example.com',
      name: 'Barbara Jensen',
      roles: ['user'],
      active: true,
      hasPassword: true,
    });
    expect(await c.app.infrastructure.authz.check(`user:${id}`, 'assignee', 'role:user')).toBe(true);
    const audit = await c.app.services.audit.list({ type: 'scim.user.created' }, { offset: 0, limit: 10 });
    expect(audit.items).toMatchObject([
      { actor_id: admin, subject_id: id, details: { userName: 'BJensen@Example.com' } },
    ]);
  });

  it('accepts application/json as well, and defaults active to true', async () => {
    const c = await setUp();
    const res = await c.request(
      'POST',
      '/Users',
      { schemas: [USER], userName: 'plain' },
      { contentType: 'application/json' },
    );
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(SCIM_JSON);
    expect(res.body).toEqual({
      schemas: [USER],
      id: res.body.id,
      userName: 'plain',
      active: true,
      meta: { resourceType: 'User', created: T0, lastModified: T0, location: `${BASE}/Users/${idOf(res)}` },
    });
  });

  it('refuses a userName that exists in any case, and an email another user signs in with: 409 uniqueness', async () => {
    const c = await setUp();
    await c.request('POST', '/Users', bjensen(await adminId(c)));
    const before = await c.app.services.users.count();
    const taken = await c.request('POST', '/Users', { schemas: [USER], userName: 'bjensen@EXAMPLE.com' });
    expect(taken.status).toBe(409);
    expect(taken.headers.get('content-type')).toMatch(SCIM_JSON);
    expect(taken.body).toEqual(scimError(409, 'userName bjensen@EXAMPLE.com is already taken', 'uniqueness'));
    const email = await c.request('POST', '/Users', {
      schemas: [USER],
      userName: 'other',
      emails: [{ value: 'BJENSEN@example.com' }],
    });
    expect(email.body).toEqual(
      scimError(409, 'emails: BJENSEN@example.com is already used by another user', 'uniqueness'),
    );
    expect(await c.app.services.users.count()).toBe(before);
  });

  it('refuses bad bodies with 400 and the SCIM error, creating nothing', async () => {
    const c = await setUp();
    const before = await c.app.services.users.count();
    const cases: [unknown, string, string][] = [
      [{ userName: 'x' }, `schemas must include ${USER}`, 'invalidValue'],
      [{ schemas: [GROUP], userName: 'x' }, `schemas must include ${USER}`, 'invalidValue'],
      [{ schemas: [USER] }, 'userName is required', 'invalidValue'],
      [{ schemas: [USER], userName: '' }, 'userName is required', 'invalidValue'],
      [{ schemas: [USER], userName: ' padded' }, 'userName must not start or end with whitespace', 'invalidValue'],
      [{ schemas: [USER], userName: true }, 'userName must be a string', 'invalidValue'],
      [{ schemas: [USER], userName: 'x', active: 'maybe' }, 'active must be a boolean', 'invalidValue'],
      [{ schemas: [USER], userName: 'x', name: 'Barbara' }, 'name must be an object', 'invalidValue'],
      [
        { schemas: [USER], userName: 'x', emails: [{ value: 'nope' }] },
        'emails[0].value is not an email address',
        'invalidValue',
      ],
      [{ schemas: [USER], userName: 'x', emails: [{ type: 'work' }] }, 'emails[0].value is required', 'invalidValue'],
      [
        {
          schemas: [USER],
          userName: 'x',
          emails: [
            { value: 'a@x.io', primary: true },
            { value: 'b@x.io', primary: true },
          ],
        },
        'At most one of emails may be primary',
        'invalidValue',
      ],
      [{ schemas: [USER], userName: 'x', password: 'short' }, 'password must be at least 8 characters', 'invalidValue'],
      [
        { schemas: [USER], userName: 'x', title: 'a\u0007b' },
        'title must not contain control characters',
        'invalidValue',
      ],
      // NUL is refused at the door, before any route reads the body.
      [
        { schemas: [USER], userName: 'x', title: 'a\u0000b' },
        'Text in a request may not contain the NUL character (U+0000)',
        'invalidValue',
      ],
      [{ schemas: [USER], userName: 'x'.repeat(257) }, 'userName must be at most 256 characters', 'invalidValue'],
    ];
    for (const [body, detail, scimType] of cases) {
      const res = await c.request('POST', '/Users', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual(scimError(400, detail, scimType));
    }
    const malformed = await c.request('POST', '/Users', undefined, { raw: '{"schemas": [' });
    expect(malformed.body).toEqual(scimError(400, 'Request body is not valid JSON', 'invalidSyntax'));
    const array = await c.request('POST', '/Users', [{ schemas: [USER], userName: 'x' }]);
    expect(array.status).toBe(400);
    expect(array.body).toMatchObject({ schemas: scimError(400, '').schemas, status: 400, scimType: 'invalidValue' });
    const text = await c.request('POST', '/Users', undefined, { raw: 'userName=x', contentType: 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.headers.get('content-type')).toMatch(SCIM_JSON);
    expect(text.body).toEqual(scimError(415, 'Request body must be application/scim+json or application/json'));
    expect(await c.app.services.users.count()).toBe(before);
  });
});

describe('GET /scim/v2/Users/{id}', () => {
  it('returns the user; 404 notFound for unknown ids and for ids that are not ids', async () => {
    const c = await setUp();
    const admin = await adminId(c);
    const { id } = await provision(c, 'x', {});
    const created = await c.request('POST', '/Users', bjensen(admin));
    const res = await c.request('GET', `/Users/${idOf(created)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(SCIM_JSON);
    expect(res.body).toEqual(bjensenAsStored(idOf(created), admin));
    expect(id).not.toBe(created.body.id);

    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await c.request('GET', `/Users/${unknown}`)).body).toEqual(
      scimError(404, `User ${unknown} not found`, 'notFound'),
    );
    const garbage = await c.request('GET', '/Users/not-an-id');
    expect(garbage.status).toBe(404);
    expect(garbage.body).toEqual(scimError(404, 'User not-an-id not found', 'notFound'));
  });

  it('narrows the representation with attributes and excludedAttributes (id and schemas always come back)', async () => {
    const { c, admin, id } = await setUpWithBjensen();
    const only = await c.request(
      'GET',
      `/Users/${id}?attributes=userName,emails.value,NAME.givenName,${ENTERPRISE}:manager.value`,
    );
    expect(only.body).toEqual({
      schemas: [USER, ENTERPRISE],
      id,
      userName: 'BJensen@Example.com',
      name: { givenName: 'Barbara' },
      emails: [{ value: 'bjensen@example.com' }, { value: 'babs@jensen.org' }],
      [ENTERPRISE]: { manager: { value: admin } },
    });
    const without = await c.request(
      'GET',
      `/Users/${id}?excludedAttributes=emails,name.givenName,addresses,phoneNumbers,meta,id,${ENTERPRISE}`,
    );
    expect(without.body).toEqual({
      schemas: [USER, ENTERPRISE],
      id,
      externalId: 'ext-701984',
      userName: 'BJensen@Example.com',
      name: { formatted: 'Barbara Jensen', familyName: 'Jensen', honorificPrefix: 'Ms.' },
      displayName: 'Babs Jensen',
      title: 'Tour Guide',
      active: true,
    });
  });
});

describe('PUT /scim/v2/Users/{id}', () => {
  it('replaces the user: attributes left out are cleared, but the password and active are kept', async () => {
    const { c, id } = await setUpWithBjensen();
    c.clock.advance(60_000);
    const res = await c.request('PUT', `/Users/${id}`, {
      schemas: [USER],
      id,
      userName: 'bjensen',
      name: { givenName: 'Barbara', familyName: 'Jensen-Smith' },
      emails: [{ value: 'barbara@example.com', type: 'work' }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      schemas: [USER],
      id,
      userName: 'bjensen',
      name: { formatted: 'Barbara Jensen-Smith', familyName: 'Jensen-Smith', givenName: 'Barbara' },
      active: true,
      emails: [{ value: 'barbara@example.com', type: 'work' }],
      meta: {
        resourceType: 'User',
        created: T0,
        lastModified: '2026-06-01T12:01:00.000Z',
        location: `${BASE}/Users/${id}`,
      },
    });
    expect(
      (await call(c.app, 'POST', '/auth/login', { body: { username: 'barbara@example.com', password: PASSWORD } }))
        .status,
    ).toBe(200);
  });

  it('refuses a taken userName (409), an unknown user (404) and a bad body (400), changing nothing', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'alice');
    await provision(c, 'bob');
    const before = await c.request('GET', `/Users/${id}`);
    expect((await c.request('PUT', `/Users/${id}`, { schemas: [USER], userName: 'BOB' })).body).toEqual(
      scimError(409, 'userName BOB is already taken', 'uniqueness'),
    );
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await c.request('PUT', `/Users/${unknown}`, { schemas: [USER], userName: 'x' })).body).toEqual(
      scimError(404, `User ${unknown} not found`, 'notFound'),
    );
    expect((await c.request('PUT', `/Users/${id}`, { schemas: [USER] })).body).toEqual(
      scimError(400, 'userName is required', 'invalidValue'),
    );
    expect((await c.request('GET', `/Users/${id}`)).body).toEqual(before.body);
  });
});

describe('PATCH /scim/v2/Users/{id}', () => {
  it('applies add, replace and remove, with and without paths, through value filters, in order', async () => {
    const { c, admin, id } = await setUpWithBjensen();
    c.clock.advance(1_000);
    const res = await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'add', value: { nickName: 'Babs', title: 'Head Guide' } },
        { op: 'replace', path: 'name.familyName', value: 'Jensen-Smith' },
        { op: 'remove', path: 'phoneNumbers' },
        { op: 'add', path: 'emails', value: [{ value: 'barbara@example.org', type: 'other' }] },
        { op: 'remove', path: 'emails[type eq "home"]' },
        { op: 'replace', path: 'emails[type eq "work"].value', value: 'barbara.jensen@example.com' },
        { op: 'replace', path: 'addresses[type eq "work"].locality', value: 'Universal City' },
        { op: 'remove', path: `${ENTERPRISE}:department` },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      schemas: [USER, ENTERPRISE],
      id,
      externalId: 'ext-701984',
      userName: 'BJensen@Example.com',
      // The formatted name was derived from the parts, so it follows them.
      name: {
        formatted: 'Barbara Jensen-Smith',
        familyName: 'Jensen-Smith',
        givenName: 'Barbara',
        honorificPrefix: 'Ms.',
      },
      displayName: 'Babs Jensen',
      nickName: 'Babs',
      title: 'Head Guide',
      active: true,
      emails: [
        { value: 'barbara.jensen@example.com', type: 'work', primary: true },
        { value: 'barbara@example.org', type: 'other' },
      ],
      addresses: [
        {
          streetAddress: '100 Universal City Plaza',
          locality: 'Universal City',
          region: 'CA',
          postalCode: '91608',
          country: 'US',
          type: 'work',
          primary: true,
        },
      ],
      [ENTERPRISE]: {
        employeeNumber: '701984',
        manager: { value: admin, $ref: `${BASE}/Users/${admin}`, displayName: 'admin' },
      },
      meta: {
        resourceType: 'User',
        created: T0,
        lastModified: '2026-06-01T12:00:01.000Z',
        location: `${BASE}/Users/${id}`,
      },
    });
    // The primary email is the sign-in email.
    expect((await c.app.services.users.get(id))?.email).toBe('barbara.jensen@example.com');
    expect((await c.request('GET', `/Users/${id}`)).body).toEqual(res.body);
  });

  it('keeps a formatted name that was set explicitly when the parts change', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'x', { name: { formatted: 'Ms. B. Jensen III', givenName: 'Barbara' } });
    const res = await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'name.givenName', value: 'Barb' }],
    });
    expect(res.body.name).toEqual({ formatted: 'Ms. B. Jensen III', givenName: 'Barb' });
  });

  it('sets and removes the password, which ends the sessions but is never returned', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'alice', { password: PASSWORD });
    const token = await login(c.app, 'alice');
    const res = await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { password: 'a brand new passphrase' } }],
    });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain('passphrase');
    expect((await call(c.app, 'GET', '/auth/me', { token })).status).toBe(401);
    expect(await login(c.app, 'alice', 'a brand new passphrase')).toEqual(expect.any(String));
    const short = await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'password', value: 'short' }],
    });
    expect(short.body).toEqual(scimError(400, 'password must be at least 8 characters', 'invalidValue'));
    await c.request('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'password' }] });
    expect((await c.app.services.users.get(id))?.hasPassword).toBe(false);
  });

  it('refuses bad operations with the RFC scimType and applies none of them', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'alice', { title: 'Before' });
    const before = (await c.request('GET', `/Users/${id}`)).body;
    // Each case is sent only when its turn comes, one after another.
    const patch =
      (Operations: unknown, schemas: unknown = [PATCH_OP]) =>
      () =>
        c.request('PATCH', `/Users/${id}`, { schemas, Operations });
    const cases: [() => Promise<{ body: unknown }>, ReturnType<typeof scimError>][] = [
      [
        patch([{ op: 'replace', path: 'title', value: 'x' }], [USER]),
        scimError(400, `schemas must include ${PATCH_OP}`, 'invalidValue'),
      ],
      [patch([]), scimError(400, 'Operations must be a non-empty array', 'invalidValue')],
      [
        patch([{ op: 'move', path: 'title' }]),
        scimError(400, 'Operations[0].op must be add, remove or replace', 'invalidSyntax'),
      ],
      [
        patch([{ op: 'replace', path: 'nosuch', value: 1 }]),
        scimError(400, "No attribute 'nosuch' in a User", 'invalidPath'),
      ],
      [
        patch([{ op: 'remove', path: 'emails[type eq]' }]),
        scimError(400, 'Expected a value (string, number, true, false or null) at position 15', 'invalidPath'),
      ],
      [
        patch([{ op: 'remove', path: 'title[value eq "x"]' }]),
        scimError(400, "'title' is not a multi-valued complex attribute", 'invalidPath'),
      ],
      [patch([{ op: 'remove' }]), scimError(400, 'remove needs a path (RFC 7644 §3.5.2.2)', 'invalidPath')],
      [patch([{ op: 'add', value: 'x' }]), scimError(400, 'add without a path needs an object value', 'invalidValue')],
      [patch([{ op: 'replace', path: 'id', value: 'x' }]), scimError(400, 'id is read-only', 'mutability')],
      [
        patch([{ op: 'add', path: 'groups', value: [{ value: 'x' }] }]),
        scimError(400, 'groups is read-only', 'mutability'),
      ],
      [
        patch([{ op: 'replace', path: 'meta.created', value: T0 }]),
        scimError(400, 'meta.created is read-only', 'mutability'),
      ],
      [patch([{ op: 'replace', value: { id: 'another' } }]), scimError(400, 'id is read-only', 'mutability')],
      [patch([{ op: 'remove', path: 'userName' }]), scimError(400, 'userName is required', 'invalidValue')],
      [
        patch([{ op: 'replace', path: 'active', value: 'maybe' }]),
        scimError(400, 'active must be a boolean', 'invalidValue'),
      ],
      // The first operation is valid; the second fails, so neither applies.
      [
        patch([
          { op: 'replace', path: 'title', value: 'After' },
          { op: 'replace', path: 'emails', value: [{ value: 'not an email' }] },
        ]),
        scimError(400, 'emails[0].value is not an email address', 'invalidValue'),
      ],
    ];
    for (const [send, expected] of cases) expect((await send()).body).toEqual(expected);
    expect((await c.request('GET', `/Users/${id}`)).body).toEqual(before);
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(
      (
        await c.request('PATCH', `/Users/${unknown}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'remove', path: 'title' }],
        })
      ).body,
    ).toEqual(scimError(404, `User ${unknown} not found`, 'notFound'));
  });
});

describe('deactivation (DELETE, or active=false) and reactivation', () => {
  it('DELETE deactivates: 204; sign-in, sessions and tuples end, the data stays; active=true restores them', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'alice', { password: PASSWORD, emails: [{ value: 'alice@example.com' }] });
    const sales = (
      await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Sales', members: [{ value: id }] })
    ).body.id as string;
    const support = (await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Support' })).body
      .id as string;
    const conversation = await c.app.services.conversations.create(`user:${id}`, 'Notes');
    const token = await login(c.app, 'alice');
    const tuples = () => c.app.infrastructure.authz.read({ user: `user:${id}` });
    const granted = [
      { user: `user:${id}`, relation: 'owner', object: `conversation:${conversation.id}` },
      { user: `user:${id}`, relation: 'member', object: `group:${sales}` },
      { user: `user:${id}`, relation: 'assignee', object: 'role:user' },
    ];
    expect(await tuples()).toEqual(granted);

    const deleted = await c.request('DELETE', `/Users/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect(await tuples()).toEqual([]);
    expect((await call(c.app, 'GET', '/auth/me', { token })).status).toBe(401);
    expect((await call(c.app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).status).toBe(
      401,
    );
    const kept = await c.request('GET', `/Users/${id}`);
    expect(kept.body).toMatchObject({
      userName: 'alice',
      active: false,
      emails: [{ value: 'alice@example.com' }],
      groups: [{ value: sales }],
    });
    // A repeated DELETE is harmless, and membership can change while the user is inactive (no tuple yet).
    expect((await c.request('DELETE', `/Users/${id}`)).status).toBe(204);
    await c.request('PATCH', `/Groups/${support}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: id }] }],
    });
    expect(await tuples()).toEqual([]);

    const back = await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'active', value: true }],
    });
    expect(back.body.active).toBe(true);
    expect(await tuples()).toEqual(
      [...granted, { user: `user:${id}`, relation: 'member', object: `group:${support}` }].sort((a, b) =>
        a.object.localeCompare(b.object),
      ),
    );
    expect(await login(c.app, 'alice')).toEqual(expect.any(String));
    const types = (await c.app.services.audit.list({ userId: id }, { offset: 0, limit: 20 })).items.map(
      (e) => e.event_type,
    );
    expect(types).toEqual(expect.arrayContaining(['scim.user.deleted', 'scim.user.reactivated']));
  });

  it('PATCH active=false ("False" as Entra sends it) deactivates just like DELETE', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'bob', { password: PASSWORD });
    const token = await login(c.app, 'bob');
    const res = await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
    });
    expect(res.body.active).toBe(false);
    expect((await call(c.app, 'GET', '/auth/me', { token })).status).toBe(401);
    expect(await c.app.infrastructure.authz.read({ user: `user:${id}` })).toEqual([]);
    const types = (await c.app.services.audit.list({ userId: id }, { offset: 0, limit: 20 })).items.map(
      (e) => e.event_type,
    );
    expect(types).toContain('scim.user.deactivated');
  });

  it('does not restore ownership of a service principal (its id may have been taken meanwhile)', async () => {
    const c = await setUp();
    const { id } = await provision(c, 'carol', { password: PASSWORD });
    const carol = await login(c.app, 'carol');
    const sp = await call(c.app, 'POST', '/api/v1/service-principals', {
      token: carol,
      body: { name: 'Carol Bot', description: 'x' },
    });
    expect(sp.status).toBe(201);
    await c.request('DELETE', `/Users/${id}`);
    await c.request('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: true } }],
    });
    expect(await c.app.infrastructure.authz.check(`user:${id}`, 'owner', 'service_principal:carol-bot')).toBe(false);
    expect(await c.app.infrastructure.authz.check(`user:${id}`, 'assignee', 'role:user')).toBe(true);
  });

  it('DELETE of an unknown user is 404', async () => {
    const c = await setUp();
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await c.request('DELETE', `/Users/${unknown}`)).body).toEqual(
      scimError(404, `User ${unknown} not found`, 'notFound'),
    );
  });
});

describe('GET /scim/v2/Users: paging, sorting, projection', () => {
  async function population(c: ScimClient) {
    for (const [userName, displayName] of [
      ['eve', 'Eve'],
      ['Carol', 'carol'],
      ['alice', 'Alice'],
      ['dave', undefined],
      ['bob', 'Bob'],
    ] as const) {
      c.clock.advance(1_000);
      await provision(c, userName, displayName ? { displayName } : {});
    }
  }
  const names = (body: Json) => (body.Resources as Json[]).map((r) => r.userName as string);

  it('defaults to startIndex 1 and count 100, ordered by userName regardless of case', async () => {
    const c = await setUp();
    await population(c);
    const res = await c.request('GET', '/Users');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(SCIM_JSON);
    expect(res.body).toMatchObject({ schemas: [LIST], totalResults: 6, startIndex: 1, itemsPerPage: 6 });
    expect(names(res.body)).toEqual(['admin', 'alice', 'bob', 'Carol', 'dave', 'eve']);
    const page = await c.request('GET', '/Users?startIndex=2&count=2');
    expect(page.body).toMatchObject({ totalResults: 6, startIndex: 2, itemsPerPage: 2 });
    expect(names(page.body)).toEqual(['alice', 'bob']);
    expect((await c.request('GET', '/Users?startIndex=7')).body).toEqual({
      schemas: [LIST],
      totalResults: 6,
      startIndex: 7,
      itemsPerPage: 0,
      Resources: [],
    });
  });

  it('refuses paging outside the bounds of the spec: 400 invalidValue', async () => {
    const c = await setUp();
    const cases: [string, string][] = [
      ['startIndex=0', 'Invalid request query: query.startIndex: startIndex must be at least 1'],
      ['count=0', 'Invalid request query: query.count: count must be an integer from 1 to 1000'],
      ['count=1001', 'Invalid request query: query.count: count must be an integer from 1 to 1000'],
      ['count=ten', 'Invalid request query: query.count: count must be an integer from 1 to 1000'],
      ['startIndex=1.5', 'Invalid request query: query.startIndex: startIndex must be an integer'],
    ];
    for (const [query, detail] of cases) {
      expect((await c.request('GET', `/Users?${query}`)).body, query).toEqual(scimError(400, detail, 'invalidValue'));
    }
    expect((await c.request('GET', '/Users?count=1000')).status).toBe(200);
  });

  it('sorts by sortBy and sortOrder, missing values last when ascending and first when descending', async () => {
    const c = await setUp();
    await population(c);
    const sorted = async (query: string) => names((await c.request('GET', `/Users?${query}`)).body);
    expect(await sorted('sortBy=displayName')).toEqual(['alice', 'bob', 'Carol', 'eve', 'admin', 'dave']);
    expect(await sorted('sortBy=DISPLAYNAME&sortOrder=Descending')).toEqual([
      'admin',
      'dave',
      'eve',
      'Carol',
      'bob',
      'alice',
    ]);
    expect(await sorted('sortBy=meta.created&sortOrder=descending&count=2')).toEqual(['bob', 'dave']);
    expect(await sorted('sortBy=userName&sortOrder=descending&count=1')).toEqual(['eve']);
    expect((await c.request('GET', '/Users?sortBy=phoneNumbers.type')).body).toEqual(
      scimError(400, 'Cannot sort by phoneNumbers.type', 'invalidValue'),
    );
    expect((await c.request('GET', '/Users?sortBy=userName&sortOrder=up')).body).toEqual(
      scimError(400, 'sortOrder must be ascending or descending', 'invalidValue'),
    );
  });

  it('refuses filters it will not run: 400 invalidFilter for bad ones, 400 tooMany for oversized ones', async () => {
    const c = await setUp();
    const get = (filter: string) => c.request('GET', `/Users?filter=${encodeURIComponent(filter)}`);
    expect((await get('userName eq')).body).toEqual(
      scimError(400, 'Expected a value (string, number, true, false or null) at position 12', 'invalidFilter'),
    );
    expect((await get(Array.from({ length: 65 }, (_, i) => `userName eq "${i}"`).join(' or '))).body).toEqual(
      scimError(400, 'Filter has more than 64 comparisons', 'tooMany'),
    );
    expect((await get(`${'not ('.repeat(17)}title pr${')'.repeat(17)}`)).body).toEqual(
      scimError(400, 'Filter is nested more than 16 levels deep', 'tooMany'),
    );
  });

  it('returns only the asked attributes in every resource', async () => {
    const c = await setUp();
    await population(c);
    const res = await c.request('GET', '/Users?filter=userName%20sw%20%22a%22&attributes=userName');
    expect(res.body.Resources).toEqual([
      { schemas: [USER], id: expect.any(String) as unknown, userName: 'admin' },
      { schemas: [USER], id: expect.any(String) as unknown, userName: 'alice' },
    ]);
  });

  it('POST /Users/.search takes the same query as a SearchRequest body', async () => {
    const c = await setUp();
    await population(c);
    const res = await c.request('POST', '/Users/.search', {
      schemas: [SEARCH_REQUEST],
      filter: 'displayName pr',
      sortBy: 'userName',
      sortOrder: 'descending',
      startIndex: 1,
      count: 2,
      attributes: ['userName'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ schemas: [LIST], totalResults: 4, startIndex: 1, itemsPerPage: 2 });
    expect(names(res.body)).toEqual(['eve', 'Carol']);
    expect((await c.request('POST', '/Users/.search', { filter: 'x pr' })).body).toEqual(
      scimError(400, 'schemas must include urn:ietf:params:scim:api:messages:2.0:SearchRequest', 'invalidValue'),
    );
    expect((await c.request('POST', '/Users/.search', { schemas: [SEARCH_REQUEST], count: 0 })).body).toEqual(
      scimError(400, 'count must be an integer from 1 to 1000', 'invalidValue'),
    );
  });
});

describe('who may provision', () => {
  it('answers 401 with a SCIM body without credentials, and 403 to users without the provisioner relation', async () => {
    const c = await setUp();
    const none = await c.request('GET', '/Users', undefined, { token: null });
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(SCIM_JSON);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(none.body).toEqual(scimError(401, 'Authentication required'));
    const bad = await c.request('GET', '/Users', undefined, { token: 'not-a-token' });
    expect(bad.status).toBe(401);
    expect(bad.body.schemas).toEqual(scimError(401, '').schemas);

    await createUser(c.app, 'mallory');
    const mallory = await login(c.app, 'mallory');
    for (const [method, path] of [
      ['GET', '/Users'],
      ['GET', '/ServiceProviderConfig'],
      ['POST', '/Users'],
      ['DELETE', '/Groups/00000000-0000-4000-8000-000000000000'],
      ['POST', '/Bulk'],
    ] as const) {
      const res = await scimRequest(
        c.app,
        mallory,
        method,
        path,
        method === 'POST' ? { schemas: [USER], userName: 'x' } : undefined,
      );
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual(
        scimError(403, 'Provisioning needs the admin role or the provisioner relation on system:global'),
      );
    }
  });

  it('lets a service principal granted the provisioner relation provision, but not change administrators', async () => {
    const c = await setUp();
    await createUser(c.app, 'owner');
    const owner = await login(c.app, 'owner');
    const sp = await call(c.app, 'POST', '/api/v1/service-principals', {
      token: owner,
      body: { name: 'Entra Sync', description: 'SCIM' },
    });
    const secret = sp.body.client_secret as string;
    const grant = async () =>
      (
        await call(c.app, 'POST', '/auth/token', {
          form: { grant_type: 'client_credentials', client_id: 'entra-sync', client_secret: secret },
        })
      ).body.access_token as string;
    expect((await scimRequest(c.app, await grant(), 'GET', '/Users')).status).toBe(403);

    await c.app.infrastructure.authz.write([
      { user: 'service_principal:entra-sync', relation: 'provisioner', object: 'system:global' },
    ]);
    const token = await grant();
    const created = await scimRequest(c.app, token, 'POST', '/Users', { schemas: [USER], userName: 'provisioned' });
    expect(created.status).toBe(201);
    const audit = await c.app.services.audit.list({ type: 'scim.user.created' }, { offset: 0, limit: 5 });
    expect(audit.items[0]).toMatchObject({ actor_id: 'service_principal:entra-sync', subject_id: created.body.id });
    expect((await scimRequest(c.app, token, 'DELETE', `/Users/${idOf(created)}`)).status).toBe(204);

    const admin = await adminId(c);
    const takeover = await scimRequest(c.app, token, 'PATCH', `/Users/${admin}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'password', value: 'attacker chosen password' }],
    });
    expect(takeover.body).toEqual(scimError(403, 'Only administrators may change an administrator through SCIM'));
    expect((await scimRequest(c.app, token, 'DELETE', `/Users/${admin}`)).status).toBe(403);
    expect((await c.app.services.users.get(admin))?.active).toBe(true);
  });
});
