import { describe, expect, it } from 'vitest';
import { jsonHoldsNul } from '../../src/http/nul-text.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';

/**
 * The NUL character, which PostgreSQL cannot store in text, refused at the door the same way on every database:
 * in a path, a query string, a JSON body or a form body, a 400 in the area's shape, and nothing stored.
 */
const closing = closeAfterEach();

describe('NUL in a request', () => {
  it('tells an escaped NUL from an escaped backslash before "u0000"', () => {
    const holds = (json: string) => jsonHoldsNul(Buffer.from(json));
    expect(holds(JSON.stringify({ name: 'a\u0000b' }))).toBe(true);
    expect(holds(JSON.stringify({ name: '\\u0000 is how JSON writes NUL' }))).toBe(false);
    expect(holds(JSON.stringify({ name: '\\\u0000' }))).toBe(true);
    expect(holds(JSON.stringify({ name: 'u0000' }))).toBe(false);
  });

  it('is refused with 400 in path, query and body, and nothing is stored', async () => {
    const app = closing(await startTestApp());
    await createUser(app, 'alice');
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const token = login.body.access_token as string;

    const named = await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'key\u0000one' } });
    expect(named.status).toBe(400);
    expect(named.body).toMatchObject({ code: 'BAD_REQUEST' });
    expect(String(named.body.message)).toContain('NUL');
    expect((await call(app, 'GET', '/api/v1/api-keys', { token })).body).toEqual([]);

    // A backslash and "u0000" is text like any other.
    const literal = await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'the \\u0000 escape' } });
    expect(literal.status).toBe(201);

    for (const path of ['/api/v1/api-keys/%00', '/api/v1/api-keys?include_expired=%00']) {
      const res = await call(app, path.includes('?') ? 'GET' : 'DELETE', path, { token });
      expect(res.status, path).toBe(400);
      expect(res.body).toMatchObject({ code: 'BAD_REQUEST' });
    }
    const form = await fetch(`${app.url('main')}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=a%00b',
    });
    expect(form.status).toBe(400);
    const refusal = (await form.json()) as Record<string, unknown>;
    expect(typeof refusal.error).toBe('string');
    expect(String(refusal.error_description)).toContain('NUL');
    const keys = (await call(app, 'GET', '/api/v1/api-keys', { token })).body as unknown as { name: string }[];
    expect(keys.map((k) => k.name)).toEqual(['the \\u0000 escape']);
  });
});
