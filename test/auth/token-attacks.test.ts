import { createHmac } from 'node:crypto';
import { SignJWT, base64url, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';

/** Tokens an attacker could build, each of which must be refused with 401. */

let app: App;
let clock: TestClock;
let valid: string;
let claims: Record<string, unknown>;
let header: Record<string, unknown>;

const encode = (value: unknown) => base64url.encode(JSON.stringify(value));

beforeAll(async () => {
  clock = new TestClock();
  app = await startTestApp({}, { now: clock.now });
  await createUser(app, 'alice');
  valid = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
    .access_token as string;
  const [h, p] = valid.split('.');
  header = JSON.parse(Buffer.from(h!, 'base64url').toString()) as Record<string, unknown>;
  claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
});
afterAll(() => app.close());

async function expectRefused(token: string, message = 'Invalid token') {
  const me = await call(app, 'GET', '/auth/me', { token });
  expect(me.status).toBe(401);
  expect(me.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_TOKEN', message });
  const verify = await call(app, 'POST', '/auth/verify', { token });
  expect(verify.status).toBe(401);
  expect(verify.body).toMatchObject({ valid: false, error: message });
}

async function signWithFreshKey(payload: Record<string, unknown>, protectedHeader: Record<string, unknown>) {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  return new SignJWT(payload).setProtectedHeader({ ...protectedHeader, alg: 'EdDSA' }).sign(privateKey);
}

describe('forged and altered access tokens are refused', () => {
  it('accepts the genuine token (control)', async () => {
    expect((await call(app, 'GET', '/auth/me', { token: valid })).status).toBe(200);
  });

  it('refuses alg "none"', async () => {
    await expectRefused(`${encode({ ...header, alg: 'none' })}.${encode(claims)}.`);
  });

  it('refuses a token signed by another key under our kid', async () => {
    await expectRefused(await signWithFreshKey(claims, header));
  });

  it('refuses HS256 signed with our public key as the HMAC secret', async () => {
    const jwks = (await call(app, 'GET', '/.well-known/jwks.json')).body.keys as { x: string }[];
    const forgedHeader = encode({ ...header, alg: 'HS256' });
    const body = encode(claims);
    for (const secret of [JSON.stringify(jwks[0]), jwks[0]!.x, Buffer.from(jwks[0]!.x, 'base64url')]) {
      const signature = createHmac('sha256', secret).update(`${forgedHeader}.${body}`).digest('base64url');
      await expectRefused(`${forgedHeader}.${body}.${signature}`);
    }
  });

  it('refuses a tampered payload (roles raised to admin) with the original signature', async () => {
    const [h, , s] = valid.split('.');
    await expectRefused(`${h}.${encode({ ...claims, roles: ['admin'] })}.${s}`);
  });

  it('refuses a wrong issuer, a wrong audience and a wrong token type, even when correctly signed', async () => {
    // Signed with our own key: only the claims are wrong.
    const { kid, privateKey } = app.services.auth.keys.signingKey();
    const sign = (payload: Record<string, unknown>, typ = 'at+jwt') =>
      new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', kid, typ }).sign(privateKey);
    await expectRefused(await sign({ ...claims, iss: 'https://evil.example.com' }));
    await expectRefused(await sign({ ...claims, aud: 'another-service' }));
    await expectRefused(await sign(claims, 'JWT'));
    const { kind: _kind, ...withoutKind } = claims;
    await expectRefused(await sign(withoutKind));
    // Control: the same signer with the right claims is accepted.
    expect((await call(app, 'GET', '/auth/me', { token: await sign(claims) })).status).toBe(200);
  });

  it('refuses an unknown kid and garbage', async () => {
    await expectRefused(await signWithFreshKey(claims, { ...header, kid: 'unknown-kid' }));
    await expectRefused('garbage');
    await expectRefused('a.b.c');
  });

  it('refuses an expired token, saying when it expired', async () => {
    const issued = clock.ms;
    clock.advance(906_000);
    try {
      const res = await call(app, 'POST', '/auth/verify', { token: valid });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        valid: false,
        error: 'Token has expired',
        expired_at: new Date(issued + 900_000).toISOString(),
      });
      expect((await call(app, 'GET', '/auth/me', { token: valid })).status).toBe(401);
    } finally {
      clock.ms = issued;
    }
  });
});

describe('signing key rotation', () => {
  it('signs with the new key while tokens of the old one keep working until they expire', async () => {
    const before = valid;
    const oldKid = header.kid;
    const newKid = await app.services.auth.keys.rotate();
    expect(newKid).not.toBe(oldKid);

    const jwks = (await call(app, 'GET', '/.well-known/jwks.json')).body.keys as { kid: string }[];
    expect(jwks.map((k) => k.kid).sort()).toEqual([oldKid, newKid].sort());
    expect((await call(app, 'GET', '/auth/me', { token: before })).status).toBe(200);

    const fresh = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
      .access_token as string;
    expect(JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString())).toMatchObject({ kid: newKid });

    // Once the old key's tokens can no longer be valid, it leaves the key set.
    clock.advance((900 + 61) * 1000);
    const later = (await call(app, 'GET', '/.well-known/jwks.json')).body.keys as { kid: string }[];
    expect(later.map((k) => k.kid)).toEqual([newKid]);
  });
});
