import { randomUUID } from 'node:crypto';
import SQLite from 'better-sqlite3';
import { hashSecret } from '../src/modules/auth/index.js';
import { hashPassword } from '../src/modules/users/index.js';
import { scimUserRow, scimUserValueRow, userRow } from '../test/helpers/rows.js';

/**
 * Rows written straight into a migrated SQLite file before the service starts on it: many users (with their SCIM
 * attributes) and many API keys, in one transaction each through prepared statements, which takes seconds where
 * going through the API would take minutes. Rows come from the project's own row helpers and key hashing.
 */

/** An INSERT of every column of `sample` into `table`, as a function of the row. */
function inserter<T extends object>(db: SQLite.Database, table: string, sample: T): (row: T) => void {
  const columns = Object.keys(sample);
  const statement = db.prepare(
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
  );
  return (row) => {
    statement.run(row);
  };
}

const TITLES = ['Engineer', 'Designer', 'Manager', 'Analyst', 'Support'];

/** User i is `user<nnnnnn>` (six digits), with SCIM attributes; every other one has a second (home) email. */
export function seedScimUsers(file: string, count: number): void {
  const db = new SQLite(file);
  try {
    const at = new Date().toISOString();
    const sampleId = randomUUID();
    const user = inserter(db, 'users', userRow({ id: sampleId, username: 'x', created_at: at }));
    const scim = inserter(db, 'scim_users', scimUserRow({ user_id: sampleId }));
    const value = inserter(db, 'scim_user_values', scimUserValueRow({ user_id: sampleId, attribute: 'x', value: 'x' }));
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        const id = randomUUID();
        const n = String(i).padStart(6, '0');
        user(
          userRow({
            id,
            username: `user${n}`,
            email: `user${n}@example.com`,
            email_key: `user${n}@example.com`,
            name: `Person ${n}`,
            roles: '["user"]',
            created_at: at,
          }),
        );
        scim(
          scimUserRow({
            user_id: id,
            external_id: `ext-${n}`,
            display_name: `Person ${n}`,
            title: TITLES[i % TITLES.length]!,
            email_type: 'work',
            email_primary: 1,
          }),
        );
        if (i % 2 === 0)
          value(scimUserValueRow({ user_id: id, attribute: 'emails', value: `home${n}@example.org`, type: 'home' }));
      }
    })();
  } finally {
    db.close();
  }
}

/** `count` live API keys, five per owner (the per-user maximum), owned by users created for them. */
export function seedApiKeys(file: string, count: number): void {
  const db = new SQLite(file);
  try {
    const now = new Date();
    const at = now.toISOString();
    const expires = new Date(now.getTime() + 365 * 86_400_000).toISOString();
    const key = (ownerId: string, name: string) => ({
      id: randomUUID(),
      user_id: ownerId,
      name,
      key_hash: hashSecret(`ak_live_${randomUUID().replaceAll('-', '')}${randomUUID().replaceAll('-', '')}`),
      generation: 1,
      created_at: at,
      expires_at: expires,
      last_used: null,
    });
    const user = inserter(db, 'users', userRow({ id: 'x', username: 'x', created_at: at }));
    const apiKey = inserter(db, 'api_keys', key('x', 'x'));
    db.transaction(() => {
      let ownerId = '';
      for (let i = 0; i < count; i++) {
        if (i % 5 === 0) {
          ownerId = randomUUID();
          user(userRow({ id: ownerId, username: `keyowner${i / 5}`, roles: '["user"]', created_at: at }));
        }
        apiKey(key(ownerId, `seeded key ${i}`));
      }
    })();
  } finally {
    db.close();
  }
}

/**
 * A local user with a password (hashed as the service hashes passwords), for the login cases: logging in as the
 * administrator would evict the administrator's own sessions beyond SESSION_MAX_CONCURRENT, tokens in use included.
 */
export async function seedLoginUser(file: string, username: string, password: string): Promise<void> {
  const passwordHash = await hashPassword(password);
  const db = new SQLite(file);
  try {
    const at = new Date().toISOString();
    const row = userRow({ id: randomUUID(), username, roles: '["user"]', password_hash: passwordHash, created_at: at });
    inserter(db, 'users', row)(row);
  } finally {
    db.close();
  }
}
