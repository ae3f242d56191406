import { CredentialsMethod, type FgaApiValidationError, OpenFgaClient } from '@openfga/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenFgaError, createOpenFgaAuthz } from '../../src/adapters/authz/openfga.js';
import type { Tuple } from '../../src/adapters/authz/port.js';
import { authorizationModel } from '../../src/modules/authz/model.js';
import { authzContract } from '../contracts/authz.contract.js';
import { FAKE_MODEL_ID, FAKE_STORE_ID, type FakeOpenFga, startFakeOpenFga } from '../fakes/openfga.js';
import { unusedPort } from '../helpers/http.js';

// Every test here talks to a FAKE OpenFGA server (test/fakes/openfga.ts) over real HTTP: no OpenFGA server can
// run here. The fake speaks OpenFGA's wire format and, like the real server, knows nothing of acts_as.

authzContract('openfga (fake OpenFGA server, pinned model)', async () => {
  const fga = await startFakeOpenFga();
  return {
    authz: createOpenFgaAuthz({ apiUrl: fga.url, storeId: fga.storeId, modelId: fga.modelId }, authorizationModel()),
    cleanup: fga.close,
  };
});

authzContract('openfga (fake OpenFGA server, latest model written through the SDK)', async () => {
  const fga = await startFakeOpenFga({ model: null, apiToken: 'fga-secret' });
  const sdk = new OpenFgaClient({
    apiUrl: fga.url,
    storeId: fga.storeId,
    credentials: { method: CredentialsMethod.ApiToken, config: { token: 'fga-secret' } },
  });
  const { type_definitions, schema_version, conditions } = authorizationModel();
  await sdk.writeAuthorizationModel({ type_definitions, schema_version, ...(conditions && { conditions }) });
  return {
    authz: createOpenFgaAuthz({ apiUrl: fga.url, storeId: fga.storeId, apiToken: 'fga-secret' }, authorizationModel()),
    cleanup: fga.close,
  };
});

describe('OpenFGA adapter against a fake OpenFGA server', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });

  async function start(options: Parameters<typeof startFakeOpenFga>[0] = {}) {
    const fga = await startFakeOpenFga(options);
    cleanups.push(fga.close);
    const authz = createOpenFgaAuthz(
      {
        apiUrl: fga.url,
        storeId: fga.storeId,
        modelId: fga.modelId,
        ...(options.apiToken && { apiToken: options.apiToken }),
      },
      authorizationModel(),
    );
    return { fga, authz };
  }

  const posts = (fga: FakeOpenFga, endpoint: string) =>
    fga.requests.filter((r) => r.method === 'POST' && r.path === `/stores/${FAKE_STORE_ID}/${endpoint}`);

  const members = (count: number, group = 'group:big'): Tuple[] =>
    Array.from({ length: count }, (_, i) => ({
      user: `user:u${String(i).padStart(3, '0')}`,
      relation: 'member',
      object: group,
    }));

  it('writes and deletes with OpenFGA’s Write body, ignoring duplicates and missing tuples', async () => {
    const { fga, authz } = await start();
    const tuple = { user: 'user:alice', relation: 'owner', object: 'conversation:c1' };
    await authz.write([tuple]);
    await authz.delete([tuple]);
    expect(posts(fga, 'write').map((r) => r.body)).toEqual([
      {
        writes: { tuple_keys: [tuple], on_duplicate: 'ignore' },
        authorization_model_id: FAKE_MODEL_ID,
      },
      {
        deletes: { tuple_keys: [tuple], on_missing: 'ignore' },
        authorization_model_id: FAKE_MODEL_ID,
      },
    ]);
  });

  it('sends checks to /stores/{id}/check with the pinned model and the bearer token', async () => {
    const { fga, authz } = await start({ apiToken: 'fga-secret' });
    await authz.write([{ user: 'user:alice', relation: 'executor', object: 'tool:chat' }]);
    expect(await authz.check('user:alice', 'viewer', 'tool:chat')).toBe(true);
    const [check] = posts(fga, 'check');
    expect(check).toMatchObject({
      authorization: 'Bearer fga-secret',
      body: {
        tuple_key: { user: 'user:alice', relation: 'viewer', object: 'tool:chat' },
        authorization_model_id: FAKE_MODEL_ID,
      },
    });
  });

  it('sends nothing for an empty write or delete, or a relation the model lacks', async () => {
    const { fga, authz } = await start();
    await authz.write([]);
    await authz.delete([]);
    expect(await authz.check('user:alice', 'janitor', 'tool:chat')).toBe(false);
    expect(await authz.listObjects('user:alice', 'janitor', 'tool')).toEqual([]);
    expect(fga.requests).toEqual([]);
  });

  it('writes and deletes beyond 100 tuples in chunks of at most 100', async () => {
    const { fga, authz } = await start();
    const tuples = members(250);
    await authz.write([...tuples, tuples[0]!]);
    expect(
      posts(fga, 'write').map((r) => (r.body as { writes: { tuple_keys: unknown[] } }).writes.tuple_keys.length),
    ).toEqual([100, 100, 50]);
    expect(fga.tuples()).toHaveLength(250);
    await authz.delete(tuples);
    expect(posts(fga, 'write')).toHaveLength(6);
    expect(fga.tuples()).toEqual([]);
  });

  it('reads beyond one page by following continuation tokens, in the embedded adapter’s order', async () => {
    const { fga, authz } = await start();
    const tuples = members(250);
    await authz.write([...tuples].reverse());
    expect(await authz.read({ object: 'group:big' })).toEqual(tuples);
    const reads = posts(fga, 'read').map((r) => r.body as { page_size: number; continuation_token?: string });
    expect(reads).toHaveLength(3);
    expect(reads.map((r) => r.page_size)).toEqual([100, 100, 100]);
    expect(reads[0]!.continuation_token).toBeUndefined();
    expect(reads[1]!.continuation_token).toEqual(expect.any(String));
  });

  it('reads by user alone type by type, and by relation alone from the whole store', async () => {
    const { fga, authz } = await start();
    await authz.write([
      { user: 'user:alice', relation: 'owner', object: 'workflow:w1' },
      { user: 'user:alice', relation: 'member', object: 'group:eng' },
      { user: 'user:bob', relation: 'owner', object: 'conversation:c1' },
    ]);
    expect(await authz.read({ user: 'user:alice' })).toEqual([
      { user: 'user:alice', relation: 'member', object: 'group:eng' },
      { user: 'user:alice', relation: 'owner', object: 'workflow:w1' },
    ]);
    const byUser = posts(fga, 'read').map((r) => (r.body as { tuple_key: { object: string } }).tuple_key.object);
    expect(byUser.sort()).toEqual(
      authorizationModel()
        .type_definitions.map((t) => `${t.type}:`)
        .sort(),
    );

    fga.requests.length = 0;
    expect(await authz.read({ relation: 'owner' })).toEqual([
      { user: 'user:bob', relation: 'owner', object: 'conversation:c1' },
      { user: 'user:alice', relation: 'owner', object: 'workflow:w1' },
    ]);
    expect(posts(fga, 'read').map((r) => r.body)).toEqual([{ page_size: 100 }]);
  });

  it('applies acts_as itself, since OpenFGA does not: the fake alone denies what the adapter grants', async () => {
    const { fga, authz } = await start();
    await authz.write([
      { user: 'user:alice', relation: 'owner', object: 'workflow:w1' },
      { user: 'user:alice', relation: 'acts_as', object: 'service_principal:bot' },
    ]);
    const sdk = new OpenFgaClient({ apiUrl: fga.url, storeId: fga.storeId, authorizationModelId: fga.modelId });
    const direct = { user: 'service_principal:bot', relation: 'editor', object: 'workflow:w1' };
    expect((await sdk.check(direct)).allowed).toBe(false);
    expect(await authz.check(direct.user, direct.relation, direct.object)).toBe(true);
    expect(await authz.listObjects('service_principal:bot', 'viewer', 'workflow')).toEqual(['workflow:w1']);
    expect(posts(fga, 'read').map((r) => r.body)).toContainEqual({
      tuple_key: { object: 'service_principal:bot', relation: 'acts_as' },
      page_size: 100,
    });
  });

  it('removes an entity as object, as user and in usersets of each of its relations', async () => {
    const { fga, authz } = await start();
    await authz.write([
      { user: 'group:eng#member', relation: 'member', object: 'group:eng' },
      { user: 'group:eng#member', relation: 'assignee', object: 'role:admin' },
      { user: 'group:eng#member', relation: 'editor', object: 'workflow:w1' },
      { user: 'user:alice', relation: 'member', object: 'group:eng' },
      { user: 'user:bob', relation: 'member', object: 'group:ops' },
    ]);
    expect(await authz.removeAllFor('group:eng')).toBe(4);
    expect(fga.tuples()).toEqual([{ user: 'user:bob', relation: 'member', object: 'group:ops' }]);
  });

  it('surfaces OpenFGA’s validation error for a relation the model lacks', async () => {
    const { authz } = await start();
    const rejected = authz.write([{ user: 'user:alice', relation: 'janitor', object: 'tool:chat' }]);
    await expect(rejected).rejects.toBeInstanceOf(OpenFgaError);
    await expect(rejected).rejects.toMatchObject({
      httpStatus: 400,
      apiCode: 'validation_error',
      message:
        "OpenFGA write failed: Invalid tuple 'tool:chat#janitor@user:alice'. Reason: relation 'tool#janitor' not found",
    });
  });

  it('fails with store_id_not_found when the store is missing', async () => {
    const { fga, authz } = await start();
    fga.storeExists = false;
    const failure = authz.check('user:alice', 'executor', 'tool:chat');
    await expect(failure).rejects.toMatchObject({
      httpStatus: 404,
      apiCode: 'store_id_not_found',
      message: `OpenFGA check failed: store ${FAKE_STORE_ID} not found`,
    });
    await expect(authz.read({})).rejects.toThrow(/store .* not found/);
  });

  it('fails clearly, without the token, when the credentials are rejected or OpenFGA is unreachable', async () => {
    const { fga } = await start({ apiToken: 'right-token' });
    const wrong = createOpenFgaAuthz(
      { apiUrl: fga.url, storeId: fga.storeId, apiToken: 'wrong-token' },
      authorizationModel(),
    );
    await expect(wrong.check('user:alice', 'executor', 'tool:chat')).rejects.toMatchObject({
      httpStatus: 401,
      message: 'OpenFGA check failed: credentials rejected',
    });

    const url = `http://127.0.0.1:${await unusedPort()}`;
    const gone = createOpenFgaAuthz(
      { apiUrl: url, storeId: FAKE_STORE_ID, apiToken: 'secret-token' },
      authorizationModel(),
    );
    const error = await gone.write([{ user: 'user:alice', relation: 'executor', object: 'tool:chat' }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenFgaError);
    expect(error).toMatchObject({ httpStatus: undefined, apiCode: 'unreachable' });
    expect((error as Error).message).toMatch(new RegExp(`^OpenFGA write failed: OpenFGA at ${url} is unreachable`));
    expect((error as Error).message).not.toContain('secret-token');
  });

  it('has the fake refuse, as OpenFGA does, what the adapter works around', async () => {
    const { fga } = await start();
    const sdk = new OpenFgaClient({ apiUrl: fga.url, storeId: fga.storeId, retryParams: { maxRetry: 0 } });
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => 'accepted',
        (error: FgaApiValidationError) => error.apiErrorCode,
      );
    expect(await refusal(sdk.write({ writes: members(101) }))).toBe('exceeded_entity_limit');
    expect(await refusal(sdk.write({ writes: [...members(1), ...members(1)] }))).toBe(
      'cannot_allow_duplicate_tuples_in_one_request',
    );
    await sdk.write({ writes: members(1) });
    expect(await refusal(sdk.write({ writes: members(1) }))).toBe('write_failed_due_to_invalid_input');
    expect(await refusal(sdk.deleteTuples(members(1, 'group:none')))).toBe('write_failed_due_to_invalid_input');
    expect(await refusal(sdk.read({ object: 'group:' }))).toBe('validation_error');
    expect(await refusal(sdk.read({ user: 'user:u000' }))).toBe('validation_error');
    expect(
      await refusal(sdk.write({ writes: [{ user: 'user:*', relation: 'owner', object: 'conversation:c1' }] })),
    ).toBe('validation_error');
    expect(fga.tuples()).toEqual(members(1));
  });

  it('reports health through OpenFGA’s store and model', async () => {
    const { fga, authz } = await start();
    const check = authz.healthCheck();
    expect(check.details).toMatchObject({ provider: 'openfga', url: fga.url, store_id: FAKE_STORE_ID });
    expect(await check.run(new AbortController().signal)).toMatchObject({
      status: 'healthy',
      details: { model_id: FAKE_MODEL_ID },
    });
  });
});
