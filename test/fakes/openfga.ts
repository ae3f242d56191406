import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthorizationModel, RelationReference } from '@openfga/sdk';
import type { Tuple } from '../../src/adapters/authz/port.js';
import { Evaluator, type TupleReader } from '../../src/adapters/authz/evaluator.js';
import { authorizationModel } from '../../src/modules/authz/model.js';
import { readJsonBody, serveOnLoopback } from '../helpers/http.js';

/**
 * A FAKE OpenFGA server, standing in for a real one that cannot run here. It speaks OpenFGA's HTTP API — the
 * paths, JSON bodies, error codes and statuses of the real server — for the calls this service makes:
 *
 * - `GET /stores/{id}`; `GET|POST /stores/{id}/authorization-models`; `GET /stores/{id}/authorization-models/{id}`
 * - `POST /stores/{id}/write` (writes and deletes, `on_duplicate` / `on_missing`, at most 100 tuples, no tuple
 *   twice, writes checked against the model's relations and type restrictions, all-or-nothing)
 * - `POST /stores/{id}/read` (tuple_key filter under Read's rules, page_size, continuation_token)
 * - `POST /stores/{id}/check` and `POST /stores/{id}/list-objects`, evaluated against the model by our own
 *   `Evaluator` with `acts_as` inheritance turned off, because real OpenFGA knows nothing of it.
 *
 * Deliberately not implemented: conditions and contextual tuples (refused with 400), consistency preferences,
 * expand, list-users, batch-check, read-changes, assertions, store creation and deletion, and OpenFGA's full
 * model validation (a POSTed model is only checked for shape). Continuation tokens are offsets into the current
 * tuples, so writing between pages may skip or repeat a tuple, which the real server does not.
 * Store and model ids are ULIDs, as OpenFGA's are.
 */
export interface FakeOpenFga {
  url: string;
  storeId: string;
  /** The latest authorization model's id ('' while the store has none). */
  modelId: string;
  /** When false, the store answers 404 store_id_not_found. */
  storeExists: boolean;
  /** Every request received, its JSON body parsed. */
  requests: FakeOpenFgaRequest[];
  /** When set, every request is answered with this status and OpenFGA's internal-error body (a failing server). */
  failWith: number | undefined;
  /** The tuples the store holds, in the order they were written. */
  tuples: () => Tuple[];
  close: () => Promise<void>;
}

export interface FakeOpenFgaRequest {
  method: string;
  path: string;
  body: unknown;
  authorization: string | undefined;
}

export interface FakeOpenFgaOptions {
  /** Preloaded as FAKE_MODEL_ID; defaults to this service's model, `null` starts the store without a model. */
  model?: AuthorizationModel | null;
  /** When set, requests must carry `Authorization: Bearer <apiToken>`, as with OpenFGA's preshared keys. */
  apiToken?: string;
}

export const FAKE_STORE_ID = '01HZX5Q3J8Y9N4W7T2V6R0M1KA';
export const FAKE_MODEL_ID = '01HZX5Q3J8Y9N4W7T2V6R0M1KB';

/** OpenFGA's defaults: tuples per Write call, and Read's default and largest page. */
const MAX_TUPLES_PER_WRITE = 100;
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** An OpenFGA error body with the HTTP status the real server gives its code. */
class FgaHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const invalid = (message: string) => new FgaHttpError(400, 'validation_error', message);

function ulid(now = Date.now()): string {
  let time = '';
  for (let value = now, i = 0; i < 10; i++, value = Math.floor(value / 32)) time = CROCKFORD[value % 32]! + time;
  const random = [...randomBytes(16)].map((byte) => CROCKFORD[byte % 32]!).join('');
  return time + random;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

const tupleString = (t: Tuple) => `${t.object}#${t.relation}@${t.user}`;

/** `type:id` with neither part empty, no `#` and no whitespace. */
function parseObject(object: string): { type: string; id: string } | undefined {
  const colon = object.indexOf(':');
  if (colon <= 0 || colon === object.length - 1 || /[#\s]/.test(object)) return undefined;
  return { type: object.slice(0, colon), id: object.slice(colon + 1) };
}

/** `type:id`, `type:*` or `type:id#relation`. */
function parseUser(user: string): { type: string; id: string; relation?: string } | undefined {
  const hash = user.indexOf('#');
  const object = parseObject(hash >= 0 ? user.slice(0, hash) : user);
  if (!object) return undefined;
  if (hash < 0) return object;
  const relation = user.slice(hash + 1);
  return relation && object.id !== '*' ? { ...object, relation } : undefined;
}

function tupleKeyOf(value: unknown): Tuple {
  const key = isRecord(value) ? value : {};
  return { user: text(key.user), relation: text(key.relation), object: text(key.object) };
}

function tupleKeysOf(value: unknown): Tuple[] {
  if (value === undefined) return [];
  if (!isRecord(value) || !Array.isArray(value.tuple_keys)) throw invalid('tuple_keys: value is required');
  return value.tuple_keys.map((key) => {
    if (isRecord(key) && key.condition !== undefined) throw invalid('conditions are not supported by this fake');
    return tupleKeyOf(key);
  });
}

function conflictMode(value: unknown, field: 'on_duplicate' | 'on_missing'): 'error' | 'ignore' {
  const mode = isRecord(value) ? value[field] : undefined;
  if (mode === undefined || mode === 'error' || mode === 'ignore') return mode ?? 'error';
  throw invalid(`invalid ${field}: ${JSON.stringify(mode)}`);
}

function relationsOf(model: AuthorizationModel, type: string) {
  return model.type_definitions.find((definition) => definition.type === type)?.relations;
}

/** Throws OpenFGA's validation error unless the model has the object's type and the relation on it. */
function checkObjectAndRelation(model: AuthorizationModel, object: string, relation: string): void {
  const parsed = parseObject(object);
  if (!parsed) throw invalid(`invalid 'object' field format: '${object}'`);
  const relations = relationsOf(model, parsed.type);
  if (!relations) throw invalid(`type '${parsed.type}' not found`);
  if (!relations[relation]) throw invalid(`relation '${parsed.type}#${relation}' not found`);
}

/** What OpenFGA's Write checks of a tuple to be written: known type, relation, and an allowed kind of user. */
function validateForWrite(model: AuthorizationModel, tuple: Tuple): void {
  const reason = (why: string) => invalid(`Invalid tuple '${tupleString(tuple)}'. Reason: ${why}`);
  const object = parseObject(tuple.object);
  if (!object) throw reason(`invalid 'object' field format`);
  const definition = model.type_definitions.find((d) => d.type === object.type);
  if (!definition) throw reason(`type '${object.type}' not found`);
  if (!definition.relations?.[tuple.relation]) throw reason(`relation '${object.type}#${tuple.relation}' not found`);
  const user = parseUser(tuple.user);
  if (!user) throw reason(`the 'user' field is malformed`);
  if (!relationsOf(model, user.type)) throw reason(`type '${user.type}' not found`);
  if (user.relation && !relationsOf(model, user.type)?.[user.relation]) {
    throw reason(`relation '${user.type}#${user.relation}' not found`);
  }
  const allowed: RelationReference[] =
    definition.metadata?.relations?.[tuple.relation]?.directly_related_user_types ?? [];
  const fits = allowed.some((ref) => {
    if (ref.type !== user.type) return false;
    if (user.id === '*') return ref.wildcard !== undefined;
    if (user.relation) return ref.relation === user.relation;
    return !ref.relation && ref.wildcard === undefined;
  });
  const kind = user.id === '*' ? `${user.type}:*` : user.relation ? `${user.type}#${user.relation}` : user.type;
  if (!fits) throw reason(`type '${kind}' is not an allowed type restriction for '${object.type}#${tuple.relation}'`);
}

/** Starts the fake on an ephemeral loopback port with one store (FAKE_STORE_ID), empty of tuples. */
export async function startFakeOpenFga(options: FakeOpenFgaOptions = {}): Promise<FakeOpenFga> {
  const preloaded = options.model === undefined ? authorizationModel() : options.model;
  /** Models oldest first; OpenFGA lists them newest first. */
  const models: AuthorizationModel[] = preloaded ? [{ ...preloaded, id: FAKE_MODEL_ID }] : [];
  const stored = new Map<string, { key: Tuple; timestamp: string }>();
  const state = {
    storeId: FAKE_STORE_ID,
    modelId: preloaded ? FAKE_MODEL_ID : '',
    storeExists: true,
    requests: [] as FakeOpenFgaRequest[],
    failWith: undefined as number | undefined,
    tuples: () => [...stored.values()].map(({ key }) => ({ ...key })),
  };

  const reader: TupleReader = {
    has: (tuple) => Promise.resolve(stored.has(tupleString(tuple))),
    usersOf: (object, relation) =>
      Promise.resolve(
        [...stored.values()]
          .filter(({ key }) => key.object === object && key.relation === relation)
          .map(({ key }) => key.user),
      ),
  };

  function resolveModel(id: unknown): AuthorizationModel {
    if (typeof id === 'string' && id !== '') {
      const model = models.find((m) => m.id === id);
      if (!model) throw new FgaHttpError(400, 'authorization_model_not_found', `Authorization Model '${id}' not found`);
      return model;
    }
    const latest = models.at(-1);
    if (!latest) {
      throw new FgaHttpError(
        400,
        'latest_authorization_model_not_found',
        `No authorization models found for store '${state.storeId}'`,
      );
    }
    return latest;
  }

  function refuseContextualTuples(body: Record<string, unknown>): void {
    const contextual = body.contextual_tuples;
    if (isRecord(contextual) && Array.isArray(contextual.tuple_keys) && contextual.tuple_keys.length > 0) {
      throw invalid('contextual tuples are not supported by this fake');
    }
  }

  function write(body: Record<string, unknown>): unknown {
    const writes = tupleKeysOf(body.writes);
    const deletes = tupleKeysOf(body.deletes);
    if (writes.length === 0 && deletes.length === 0) {
      throw new FgaHttpError(
        400,
        'invalid_write_input',
        'Invalid input. Make sure you provide at least one write, or at least one delete',
      );
    }
    if (writes.length > 0) {
      const model = resolveModel(body.authorization_model_id);
      for (const tuple of writes) validateForWrite(model, tuple);
    }
    for (const tuple of deletes) {
      if (!parseUser(tuple.user))
        throw invalid(`Invalid tuple '${tupleString(tuple)}'. Reason: the 'user' field is malformed`);
    }
    const seen = new Set<string>();
    for (const tuple of [...deletes, ...writes]) {
      if (seen.has(tupleString(tuple))) {
        throw new FgaHttpError(
          400,
          'cannot_allow_duplicate_tuples_in_one_request',
          `duplicate tuple in write: user: '${tuple.user}', relation: '${tuple.relation}', object: '${tuple.object}'`,
        );
      }
      seen.add(tupleString(tuple));
    }
    if (seen.size > MAX_TUPLES_PER_WRITE) {
      throw new FgaHttpError(
        400,
        'exceeded_entity_limit',
        `The number of write operations exceeds the allowed limit of ${MAX_TUPLES_PER_WRITE}`,
      );
    }
    // All or nothing, deletes first, as in OpenFGA: check every conflict before changing anything.
    const onMissing = conflictMode(body.deletes, 'on_missing');
    const onDuplicate = conflictMode(body.writes, 'on_duplicate');
    const describe = (t: Tuple) => `user: '${t.user}', relation: '${t.relation}', object: '${t.object}'`;
    for (const tuple of deletes) {
      if (onMissing === 'error' && !stored.has(tupleString(tuple))) {
        throw new FgaHttpError(
          400,
          'write_failed_due_to_invalid_input',
          `cannot delete a tuple which does not exist: ${describe(tuple)}: invalid write input`,
        );
      }
    }
    const deleted = new Set(deletes.map(tupleString));
    for (const tuple of writes) {
      if (onDuplicate === 'error' && stored.has(tupleString(tuple)) && !deleted.has(tupleString(tuple))) {
        throw new FgaHttpError(
          400,
          'write_failed_due_to_invalid_input',
          `cannot write a tuple which already exists: ${describe(tuple)}: invalid write input`,
        );
      }
    }
    for (const tuple of deletes) stored.delete(tupleString(tuple));
    const timestamp = new Date().toISOString();
    for (const tuple of writes) {
      if (!stored.has(tupleString(tuple))) stored.set(tupleString(tuple), { key: tuple, timestamp });
    }
    return {};
  }

  function read(body: Record<string, unknown>): unknown {
    const filter = body.tuple_key === undefined ? undefined : tupleKeyOf(body.tuple_key);
    if (filter) {
      // Read's own rule: an object type, and either an object id or a user.
      const colon = filter.object.indexOf(':');
      const type = colon > 0 ? filter.object.slice(0, colon) : '';
      const id = colon > 0 ? filter.object.slice(colon + 1) : '';
      if (type === '' || (id === '' && filter.user === '')) {
        throw invalid(
          "the 'tuple_key' field was provided but the object type field is required and both the object id and user cannot be empty",
        );
      }
      // Stricter than some OpenFGA versions, which read without looking at the model: a filter naming a type
      // or relation the latest model lacks is refused, so the adapter is kept from relying on such reads.
      const model = models.at(-1);
      if (model && !relationsOf(model, type)) throw invalid(`type '${type}' not found`);
      if (model && filter.relation && !relationsOf(model, type)?.[filter.relation]) {
        throw invalid(`relation '${type}#${filter.relation}' not found`);
      }
      if (filter.user && !parseUser(filter.user)) throw invalid(`invalid 'user' field format: '${filter.user}'`);
    }
    const pageSize = body.page_size === undefined ? DEFAULT_PAGE_SIZE : body.page_size;
    if (typeof pageSize !== 'number' || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
      throw new FgaHttpError(400, 'page_size_invalid', `PageSize: value must be inside range [1, ${MAX_PAGE_SIZE}]`);
    }
    let offset = 0;
    const token = text(body.continuation_token);
    if (token !== '') {
      const decoded = /^offset:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
      if (!decoded) throw new FgaHttpError(400, 'invalid_continuation_token', 'Invalid continuation token');
      offset = Number(decoded[1]);
    }
    const matching = [...stored.values()].filter(({ key }) => {
      if (!filter) return true;
      if (filter.object.endsWith(':') ? !key.object.startsWith(filter.object) : key.object !== filter.object) {
        return false;
      }
      return (!filter.relation || key.relation === filter.relation) && (!filter.user || key.user === filter.user);
    });
    const page = matching.slice(offset, offset + pageSize);
    const next = offset + pageSize < matching.length ? offset + pageSize : undefined;
    return {
      tuples: page.map(({ key, timestamp }) => ({ key: { ...key }, timestamp })),
      continuation_token: next === undefined ? '' : Buffer.from(`offset:${next}`).toString('base64url'),
    };
  }

  /**
   * The model a Check or ListObjects names (or the latest) and an evaluator over it — with acts_as inheritance
   * off, because that is this service's rule and real OpenFGA does not apply it.
   */
  function evaluatorFor(body: Record<string, unknown>): { model: AuthorizationModel; evaluator: Evaluator } {
    refuseContextualTuples(body);
    if (body.context !== undefined && !(isRecord(body.context) && Object.keys(body.context).length === 0)) {
      throw invalid('conditions are not supported by this fake');
    }
    const model = resolveModel(body.authorization_model_id);
    return { model, evaluator: new Evaluator(model, reader, { actsAs: false }) };
  }

  async function check(body: Record<string, unknown>): Promise<unknown> {
    if (!isRecord(body.tuple_key)) throw invalid('TupleKey: value is required');
    const { user, relation, object } = tupleKeyOf(body.tuple_key);
    const { model, evaluator } = evaluatorFor(body);
    checkObjectAndRelation(model, object, relation);
    if (!parseUser(user)) throw invalid(`invalid 'user' field format: '${user}'`);
    return { allowed: await evaluator.check(user, relation, object), resolution: '' };
  }

  async function listObjects(body: Record<string, unknown>): Promise<unknown> {
    const type = text(body.type);
    const relation = text(body.relation);
    const user = text(body.user);
    const { model, evaluator } = evaluatorFor(body);
    if (!relationsOf(model, type)) throw invalid(`type '${type}' not found`);
    if (!relationsOf(model, type)?.[relation]) throw invalid(`relation '${type}#${relation}' not found`);
    if (!parseUser(user)) throw invalid(`invalid 'user' field format: '${user}'`);
    const candidates = new Set(
      [...stored.values()].map(({ key }) => key.object).filter((o) => o.startsWith(`${type}:`)),
    );
    const objects: string[] = [];
    for (const object of candidates) if (await evaluator.check(user, relation, object)) objects.push(object);
    return { objects };
  }

  function writeModel(body: unknown): unknown {
    if (!isRecord(body) || !Array.isArray(body.type_definitions) || body.type_definitions.length === 0) {
      throw new FgaHttpError(
        400,
        'type_definitions_too_few_items',
        'TypeDefinitions: value must contain at least 1 item(s)',
      );
    }
    if (body.schema_version !== '1.1') {
      throw invalid(`invalid schema version: ${String(body.schema_version)}; only 1.1 is supported`);
    }
    const types = body.type_definitions.map((definition) => (isRecord(definition) ? text(definition.type) : ''));
    if (types.some((type) => type === '') || new Set(types).size !== types.length) {
      throw new FgaHttpError(400, 'invalid_authorization_model', 'each type definition needs a unique type');
    }
    const id = ulid();
    models.push({ conditions: {}, ...(body as unknown as AuthorizationModel), id });
    state.modelId = id;
    return { authorization_model_id: id };
  }

  async function route(req: IncomingMessage, method: string, path: string, body: unknown): Promise<[number, unknown]> {
    if (options.apiToken !== undefined && req.headers.authorization !== `Bearer ${options.apiToken}`) {
      throw new FgaHttpError(401, 'unauthenticated', 'unauthenticated');
    }
    const storeMatch = /^\/stores\/([^/]+)(\/.*)?$/.exec(path);
    if (!storeMatch) throw new FgaHttpError(404, 'undefined_endpoint', 'Not Found');
    if (storeMatch[1] !== state.storeId || !state.storeExists) {
      throw new FgaHttpError(404, 'store_id_not_found', 'Store ID not found');
    }
    const rest = storeMatch[2] ?? '';
    const json = isRecord(body) ? body : {};
    const now = '2026-01-01T00:00:00Z';
    const endpoint = `${method} ${rest.replace(/^\/authorization-models\/[^/]+$/, '/authorization-models/{id}')}`;
    switch (endpoint) {
      case 'GET ':
        return [200, { id: state.storeId, name: 'agent-service', created_at: now, updated_at: now }];
      case 'GET /authorization-models': {
        const query = new URL(req.url ?? '/', 'http://x').searchParams;
        const pageSize = Number(query.get('page_size') ?? DEFAULT_PAGE_SIZE);
        const offset = Number(Buffer.from(query.get('continuation_token') ?? '', 'base64url').toString() || 0);
        const newestFirst = [...models].reverse();
        const next = offset + pageSize < newestFirst.length ? offset + pageSize : undefined;
        return [
          200,
          {
            authorization_models: newestFirst.slice(offset, offset + pageSize),
            continuation_token: next === undefined ? '' : Buffer.from(String(next)).toString('base64url'),
          },
        ];
      }
      case 'POST /authorization-models':
        return [201, writeModel(body)];
      case 'GET /authorization-models/{id}':
        return [200, { authorization_model: resolveModel(rest.slice('/authorization-models/'.length)) }];
      case 'POST /write':
        return [200, write(json)];
      case 'POST /read':
        return [200, read(json)];
      case 'POST /check':
        return [200, await check(json)];
      case 'POST /list-objects':
        return [200, await listObjects(json)];
      default:
        throw new FgaHttpError(404, 'undefined_endpoint', 'Not Found');
    }
  }

  const served = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    readJsonBody(req, () => {
      throw invalid('malformed JSON');
    })
      .then(async (body) => {
        state.requests.push({ method, path, body, authorization: req.headers.authorization });
        if (state.failWith) throw new FgaHttpError(state.failWith, 'internal_error', 'Internal Server Error');
        const [status, response] = await route(req, method, path, body);
        send(res, status, response);
      })
      .catch((error: unknown) => {
        if (error instanceof FgaHttpError) send(res, error.status, { code: error.code, message: error.message });
        else send(res, 500, { code: 'internal_error', message: 'Internal Server Error' });
      });
  });
  return Object.assign(state, { url: served.url, close: served.close });
}
