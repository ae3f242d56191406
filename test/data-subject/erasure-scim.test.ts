import { afterEach, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import { tablesContaining } from '../helpers/scan.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

let app: App | undefined;
afterEach(async () => {
  await app?.close();
});

it('erasing a manager clears the references other SCIM users hold to them', async () => {
  app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1' });
  const admin = (
    await call(app, 'POST', '/auth/login', { body: { username: 'admin', password: 'bootstrap-secret-1' } })
  ).body.access_token as string;
  const scim = (method: string, path: string, body?: unknown) =>
    call(app!, method, `/scim/v2${path}`, {
      token: admin,
      ...(body !== undefined && { body }),
      headers: { Accept: 'application/scim+json' },
    });

  const manager = await scim('POST', '/Users', {
    schemas: [USER],
    userName: 'maria',
    password: 'manager-password-1',
    emails: [{ value: 'maria@example.com', primary: true }],
  });
  expect(manager.status).toBe(201);
  const managerId = manager.body.id as string;
  const report = await scim('POST', '/Users', {
    schemas: [USER, ENTERPRISE],
    userName: 'rob',
    [ENTERPRISE]: { manager: { value: managerId } },
  });
  expect(report.status).toBe(201);
  expect((await scim('GET', `/Users/${String(report.body.id)}`)).body[ENTERPRISE]).toMatchObject({
    manager: { value: managerId },
  });

  const maria = (
    await call(app, 'POST', '/auth/login', { body: { username: 'maria', password: 'manager-password-1' } })
  ).body.access_token as string;
  const erased = await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { token: maria });
  expect(erased.status).toBe(200);
  expect((erased.body.anonymized_items as Record<string, number>).manager_references).toBe(1);

  expect(await tablesContaining(app.infrastructure.db, managerId)).toEqual([]);
  const after = await scim('GET', `/Users/${String(report.body.id)}`);
  expect(after.status).toBe(200);
  expect((after.body[ENTERPRISE] as Record<string, unknown> | undefined)?.manager).toBeUndefined();
});
