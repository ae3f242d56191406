import { afterEach, describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';
import {
  BASE,
  GROUP,
  idOf,
  type Json,
  LIST,
  PATCH_OP,
  resourcesOf,
  type ScimClient,
  scimError,
  SEARCH_REQUEST,
  startScim,
  USER,
} from './helpers.js';

const closing = closeAfterEach();

const T0 = '2026-06-01T12:00:00.000Z';

async function setUp() {
  const c = closing(await startScim());
  const user = async (userName: string, displayName?: string) => {
    const res = await c.request('POST', '/Users', { schemas: [USER], userName, ...(displayName && { displayName }) });
    return res.body.id as string;
  };
  return { c, alice: await user('alice', 'Alice Smith'), bob: await user('bob'), carol: await user('carol') };
}

const member = (id: string, display: string) => ({ value: id, display, $ref: `${BASE}/Users/${id}`, type: 'User' });
const memberTuples = async (c: ScimClient, groupId: string) =>
  (await c.app.infrastructure.authz.read({ object: `group:${groupId}`, relation: 'member' })).map((t) => t.user).sort();

describe('POST /scim/v2/Groups', () => {
  it('creates a group with a path-like name, its members, and their membership tuples', async () => {
    const { c, alice, bob } = await setUp();
    const res = await c.request('POST', '/Groups', {
      schemas: [GROUP],
      externalId: 'grp-1',
      displayName: 'Sales & Marketing',
      members: [{ value: alice }, { value: bob.toUpperCase(), type: 'User', display: 'ignored' }, { value: alice }],
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const id = res.body.id as string;
    expect(res.headers.get('location')).toBe(`${BASE}/Groups/${id}`);
    expect(res.body).toEqual({
      schemas: [GROUP],
      id,
      externalId: 'grp-1',
      displayName: 'Sales & Marketing',
      members: [member(alice, 'Alice Smith'), member(bob, 'bob')],
      meta: { resourceType: 'Group', created: T0, lastModified: T0, location: `${BASE}/Groups/${id}` },
    });
    expect(await c.app.services.users.groupsOf(alice)).toEqual(['/Sales - Marketing']);
    expect(await memberTuples(c, id)).toEqual([`user:${alice}`, `user:${bob}`].sort());
    expect(await c.app.infrastructure.authz.check(`user:${alice}`, 'member', `group:${id}`)).toBe(true);
    const user = await c.request('GET', `/Users/${alice}`);
    expect(user.body.groups).toEqual([
      { value: id, $ref: `${BASE}/Groups/${id}`, display: 'Sales & Marketing', type: 'direct' },
    ]);
  });

  it('refuses a displayName another group has in any case (409), and suffixes a path two names share', async () => {
    const { c } = await setUp();
    await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Sales & Marketing' });
    expect((await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'sales & marketing' })).body).toEqual(
      scimError(409, 'A group named sales & marketing already exists', 'uniqueness'),
    );
    const twin = await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Sales / Marketing' });
    expect(twin.status).toBe(201);
    expect(twin.body.displayName).toBe('Sales / Marketing');
    const names = (
      await c.app.infrastructure.db.kysely.selectFrom('groups').select('name').orderBy('name').execute()
    ).map((g) => g.name);
    expect(names).toEqual(['/Sales - Marketing', '/Sales - Marketing-2']);
  });

  it('refuses bad bodies: missing displayName or schema, unknown users, nested groups (400)', async () => {
    const { c, alice } = await setUp();
    const unknown = '00000000-0000-4000-8000-000000000000';
    const cases: [unknown, string][] = [
      [{ displayName: 'x' }, `schemas must include ${GROUP}`],
      [{ schemas: [GROUP] }, 'displayName is required'],
      [{ schemas: [GROUP], displayName: '   ' }, 'displayName is required'],
      [{ schemas: [GROUP], displayName: 'x', members: [{ value: unknown }] }, `members: no User with id ${unknown}`],
      [{ schemas: [GROUP], displayName: 'x', members: [{ value: 'nope' }] }, 'members: no User with id nope'],
      [
        { schemas: [GROUP], displayName: 'x', members: [{ value: alice, type: 'Group' }] },
        'members[0]: only Users can be members (nested groups are not supported)',
      ],
      [
        { schemas: [GROUP], displayName: 'x', members: [{ display: 'no value' }] },
        'members[0].value must be a User id',
      ],
      [{ schemas: [GROUP], displayName: 'x', members: { value: alice } }, 'members must be an array'],
    ];
    for (const [body, detail] of cases) {
      expect((await c.request('POST', '/Groups', body)).body, JSON.stringify(body)).toEqual(
        scimError(400, detail, 'invalidValue'),
      );
    }
    expect((await c.request('GET', '/Groups')).body.totalResults).toBe(0);
  });
});

describe('GET /scim/v2/Groups', () => {
  it('reads a group, without members when asked; 404 notFound otherwise', async () => {
    const { c, alice } = await setUp();
    const id = idOf(
      await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Admins', members: [{ value: alice }] }),
    );
    expect((await c.request('GET', `/Groups/${id}`)).body.members).toEqual([member(alice, 'Alice Smith')]);
    expect((await c.request('GET', `/Groups/${id}?excludedAttributes=members`)).body).toEqual({
      schemas: [GROUP],
      id,
      displayName: 'Admins',
      meta: { resourceType: 'Group', created: T0, lastModified: T0, location: `${BASE}/Groups/${id}` },
    });
    expect((await c.request('GET', `/Groups/${id}?attributes=displayName`)).body).toEqual({
      schemas: [GROUP],
      id,
      displayName: 'Admins',
    });
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await c.request('GET', `/Groups/${unknown}`)).body).toEqual(
      scimError(404, `Group ${unknown} not found`, 'notFound'),
    );
  });

  it('filters by displayName (any case), externalId, members, sorts and pages', async () => {
    const { c, alice, bob } = await setUp();
    const make = async (displayName: string, members: string[], externalId?: string) => {
      c.clock.advance(1_000);
      const res = await c.request('POST', '/Groups', {
        schemas: [GROUP],
        displayName,
        ...(externalId && { externalId }),
        members: members.map((value) => ({ value })),
      });
      return res.body.id as string;
    };
    const admins = await make('Admins', [alice], 'ExT-1');
    const sales = await make('Sales', [alice, bob]);
    const support = await make('support', []);
    const ids = async (query: string) => {
      const res = await c.request('GET', `/Groups?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.Resources as { id: string }[]).map((g) => g.id);
    };
    const filter = (f: string) => `filter=${encodeURIComponent(f)}&excludedAttributes=members`;
    expect(await ids(filter('displayName eq "SALES"'))).toEqual([sales]);
    expect(await ids(filter('externalId eq "ExT-1"'))).toEqual([admins]);
    expect(await ids(filter('externalId eq "ext-1"'))).toEqual([]);
    expect(await ids(filter(`members[value eq "${bob}"]`))).toEqual([sales]);
    expect(await ids(filter(`members eq "${alice.toUpperCase()}"`))).toEqual([admins, sales]);
    expect(await ids(filter('members.display eq "alice smith" and not (displayName sw "adm")'))).toEqual([sales]);
    expect(await ids(filter('not (members pr)'))).toEqual([support]);
    expect(await ids(filter(`meta.created gt "${new Date(Date.parse(T0) + 1500).toISOString()}"`))).toEqual([
      sales,
      support,
    ]);
    expect(await ids('sortBy=displayName&sortOrder=descending')).toEqual([support, sales, admins]);
    const page = await c.request('GET', '/Groups?startIndex=2&count=1&excludedAttributes=members');
    expect(page.body).toMatchObject({ schemas: [LIST], totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect((await c.request('GET', `/Groups?${filter('displayName eq')}`)).body).toEqual(
      scimError(400, 'Expected a value (string, number, true, false or null) at position 15', 'invalidFilter'),
    );
    expect((await c.request('GET', `/Groups?${filter('userName eq "x"')}`)).body).toEqual(
      scimError(400, "Unknown attribute 'userName' in filter", 'invalidFilter'),
    );
  });
});

describe('POST /scim/v2/Groups/.search', () => {
  it('takes a SearchRequest body, as GET takes its query', async () => {
    const { c } = await setUp();
    for (const displayName of ['Alpha', 'Beta', 'Gamma'])
      await c.request('POST', '/Groups', { schemas: [GROUP], displayName });
    const res = await c.request('POST', '/Groups/.search', {
      schemas: [SEARCH_REQUEST],
      filter: 'displayName ne "beta"',
      sortBy: 'displayName',
      sortOrder: 'descending',
      excludedAttributes: ['members', 'meta'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      schemas: [LIST],
      totalResults: 2,
      startIndex: 1,
      itemsPerPage: 2,
      Resources: [
        { schemas: [GROUP], id: expect.any(String) as unknown, displayName: 'Gamma' },
        { schemas: [GROUP], id: expect.any(String) as unknown, displayName: 'Alpha' },
      ],
    });
    expect((await c.request('POST', '/Groups/.search', { schemas: [SEARCH_REQUEST], filter: 7 })).body).toEqual(
      scimError(400, 'filter must be a string', 'invalidValue'),
    );
  });
});

describe('PUT and PATCH /scim/v2/Groups/{id}', () => {
  it('PUT renames and replaces the members, moving their tuples', async () => {
    const { c, alice, bob, carol } = await setUp();
    const id = idOf(
      await c.request('POST', '/Groups', {
        schemas: [GROUP],
        displayName: 'Team',
        members: [{ value: alice }, { value: bob }],
      }),
    );
    c.clock.advance(1_000);
    const res = await c.request('PUT', `/Groups/${id}`, {
      schemas: [GROUP],
      id,
      displayName: 'Team Blue',
      members: [{ value: bob }, { value: carol }],
    });
    expect(res.body).toEqual({
      schemas: [GROUP],
      id,
      displayName: 'Team Blue',
      members: [member(bob, 'bob'), member(carol, 'carol')],
      meta: {
        resourceType: 'Group',
        created: T0,
        lastModified: '2026-06-01T12:00:01.000Z',
        location: `${BASE}/Groups/${id}`,
      },
    });
    expect(await memberTuples(c, id)).toEqual([`user:${bob}`, `user:${carol}`].sort());
    expect(await c.app.services.users.groupsOf(carol)).toEqual(['/Team Blue']);
    expect(
      (await c.request('PUT', `/Groups/${id}`, { schemas: [GROUP], displayName: 'x', members: [{ value: 'nope' }] }))
        .body,
    ).toEqual(scimError(400, 'members: no User with id nope', 'invalidValue'));
    const other = (await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Other' })).body.id as string;
    expect((await c.request('PUT', `/Groups/${other}`, { schemas: [GROUP], displayName: 'TEAM BLUE' })).body).toEqual(
      scimError(409, 'A group named TEAM BLUE already exists', 'uniqueness'),
    );
    expect((await c.request('GET', `/Groups/${id}`)).body).toEqual(res.body);
  });

  it('PATCH adds and removes members (value filters, Entra value lists), renames, and writes tuples', async () => {
    const { c, alice, bob, carol } = await setUp();
    const id = idOf(await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Team' }));
    const patch = (Operations: unknown[]) => c.request('PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations });
    const members = (body: { members?: { value: string }[] }) => (body.members ?? []).map((m) => m.value).sort();

    let res = await patch([
      { op: 'add', path: 'members', value: [{ value: alice }, { value: bob }, { value: carol }] },
    ]);
    expect(members(res.body)).toEqual([alice, bob, carol].sort());
    expect(await memberTuples(c, id)).toEqual([alice, bob, carol].map((u) => `user:${u}`).sort());

    res = await patch([{ op: 'remove', path: `members[value eq "${bob}"]` }]);
    expect(members(res.body)).toEqual([alice, carol].sort());
    res = await patch([{ op: 'Remove', path: 'members', value: [{ value: carol }] }]);
    expect(members(res.body)).toEqual([alice]);
    expect(await memberTuples(c, id)).toEqual([`user:${alice}`]);

    res = await patch([{ op: 'replace', value: { id, displayName: 'Team Red' } }]);
    expect(res.body.displayName).toBe('Team Red');
    expect(await c.app.services.users.groupsOf(alice)).toEqual(['/Team Red']);

    res = await patch([{ op: 'replace', path: 'members', value: [{ value: bob }] }]);
    expect(members(res.body)).toEqual([bob]);
    res = await patch([{ op: 'remove', path: 'members' }]);
    expect(res.body.members).toBeUndefined();
    expect(await memberTuples(c, id)).toEqual([]);

    expect((await patch([{ op: 'add', path: 'members', value: [{ value: 'nope' }] }])).body).toEqual(
      scimError(400, 'members: no User with id nope', 'invalidValue'),
    );
    expect((await patch([{ op: 'replace', path: `members[value eq "${bob}"].value`, value: alice }])).body).toEqual(
      scimError(400, `members[value eq "${bob}"].value cannot be changed once set`, 'mutability'),
    );
    expect((await patch([{ op: 'replace', value: { id: 'another' } }])).body).toEqual(
      scimError(400, 'id is read-only', 'mutability'),
    );
    expect((await patch([{ op: 'replace', path: 'displayName', value: null }])).body).toEqual(
      scimError(400, 'displayName is required', 'invalidValue'),
    );
  });
});

describe('DELETE /scim/v2/Groups/{id}', () => {
  it('deletes the group, its memberships and its tuples; then 404', async () => {
    const { c, alice } = await setUp();
    const id = idOf(
      await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Gone', members: [{ value: alice }] }),
    );
    await c.app.infrastructure.authz.write([
      { user: `group:${id}#member`, relation: 'assignee', object: 'role:auditor' },
    ]);
    const res = await c.request('DELETE', `/Groups/${id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expect(await c.app.infrastructure.authz.read({ object: `group:${id}` })).toEqual([]);
    expect(await c.app.infrastructure.authz.read({ object: 'role:auditor' })).toEqual([]);
    expect(await c.app.services.users.groupsOf(alice)).toEqual([]);
    expect((await c.request('GET', `/Groups/${id}`)).status).toBe(404);
    expect((await c.request('DELETE', `/Groups/${id}`)).body).toEqual(
      scimError(404, `Group ${id} not found`, 'notFound'),
    );
    const types = (await c.app.services.audit.list({ type: 'scim.group.deleted' }, { offset: 0, limit: 5 })).items;
    expect(types).toMatchObject([{ details: { group_id: id } }]);
  });
});

describe('groups from single sign-on claims', () => {
  it('are listed with their path as displayName, and adopted by a SCIM group of that name', async () => {
    const { c, alice, bob } = await setUp();
    await c.app.services.users.setGroups(alice, ['/Engineering']);
    const listed = await c.request('GET', `/Groups?filter=${encodeURIComponent('displayName eq "/engineering"')}`);
    expect(listed.body.Resources).toMatchObject([{ displayName: '/Engineering', members: [{ value: alice }] }]);
    const ssoId = resourcesOf(listed)[0]!.id as string;

    const adopted = await c.request('POST', '/Groups', {
      schemas: [GROUP],
      displayName: 'Engineering',
      members: [{ value: bob }],
    });
    expect(adopted.status).toBe(201);
    expect(adopted.body.id).toBe(ssoId);
    expect((adopted.body.members as Json[]).map((m) => m.value as string).sort()).toEqual([alice, bob].sort());
  });

  it('do not change the members of a group SCIM manages, whatever the claims say at sign-in', async () => {
    const { c, alice } = await setUp();
    const id = idOf(
      await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Finance', members: [{ value: alice }] }),
    );
    await c.app.services.users.setGroups(alice, ['/Other']);
    expect(await c.app.services.users.groupsOf(alice)).toEqual(['/Finance', '/Other']);
    await c.app.services.users.setGroups(alice, ['/Finance']); // a claim naming the SCIM group adds nothing either
    expect(await c.app.services.users.groupsOf(alice)).toEqual(['/Finance']);
    await c.app.services.users.setGroups(alice, []);
    expect(await c.app.services.users.groupsOf(alice)).toEqual(['/Finance']);
    expect(await c.app.infrastructure.authz.check(`user:${alice}`, 'member', `group:${id}`)).toBe(true);
  });

  it('grant no tuples to a deactivated user (reactivation writes them)', async () => {
    const { c, alice } = await setUp();
    await c.request('DELETE', `/Users/${alice}`);
    await c.app.services.users.setGroups(alice, ['/Claimed']);
    await c.app.services.users.setRoles(alice, ['user', 'auditor']);
    expect(await c.app.infrastructure.authz.read({ user: `user:${alice}` })).toEqual([]);
    await c.request('PATCH', `/Users/${alice}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'active', value: true }],
    });
    const objects = (await c.app.infrastructure.authz.read({ user: `user:${alice}` })).map((t) => t.object);
    expect(objects).toEqual(expect.arrayContaining(['role:user', 'role:auditor', expect.stringMatching(/^group:/)]));
  });
});

for (const dialect of DIALECTS) {
  describeWithService(`concurrent changes on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase | undefined;
    let client: ScimClient | undefined;
    afterEach(async () => {
      await client?.app.close();
      await database?.cleanup();
    });

    it('applies concurrent membership PATCHes of one group without losing any', async () => {
      database = await dialect.createMigrated();
      client = await startScim({ DATABASE_URL: database.url });
      const c = client;
      const users: string[] = [];
      for (let i = 0; i < 12; i++)
        users.push(idOf(await c.request('POST', '/Users', { schemas: [USER], userName: `u${i}` })));
      const id = idOf(await c.request('POST', '/Groups', { schemas: [GROUP], displayName: 'Busy' }));
      const responses = await Promise.all(
        users.map((user) =>
          c.request('PATCH', `/Groups/${id}`, {
            schemas: [PATCH_OP],
            Operations: [{ op: 'add', path: 'members', value: [{ value: user }] }],
          }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(users.map(() => 200));
      const members = ((await c.request('GET', `/Groups/${id}`)).body.members as Json[]).map((m) => m.value as string);
      expect(members.sort()).toEqual([...users].sort());
      expect(await memberTuples(c, id)).toEqual(users.map((u) => `user:${u}`).sort());
    });

    it('applies concurrent PATCHes of one user without losing any (each rewrites the whole user)', async () => {
      database = await dialect.createMigrated();
      client = await startScim({ DATABASE_URL: database.url });
      const c = client;
      const id = idOf(await c.request('POST', '/Users', { schemas: [USER], userName: 'busy' }));
      const numbers = Array.from({ length: 12 }, (_, i) => `555-01${String(i).padStart(2, '0')}`);
      const responses = await Promise.all(
        numbers.map((value) =>
          c.request('PATCH', `/Users/${id}`, {
            schemas: [PATCH_OP],
            Operations: [{ op: 'add', path: 'phoneNumbers', value: [{ value }] }],
          }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(numbers.map(() => 200));
      const stored = ((await c.request('GET', `/Users/${id}`)).body.phoneNumbers as Json[]).map(
        (p) => p.value as string,
      );
      expect(stored.sort()).toEqual(numbers);
    });
  });
}
