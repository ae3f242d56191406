import { CommonErrorCode, ServiceUnavailableError } from '../../errors.js';
import { type CircuitBreaker, CircuitOpenError } from '../breaker/breaker.js';
import { openFgaSdk } from './openfga-sdk.js';
import { openFgaClient } from './openfga-client.js';
import type { AuthorizationModel, ReadRequestTupleKey } from '@openfga/sdk';
import { splitObject } from './evaluator.js';
import { openFgaHealthCheck } from './health.js';
import type { AuthzService, Tuple, TupleFilter } from './port.js';

/** Where the OpenFGA store is and how to reach it. Without `modelId`, OpenFGA uses the store's latest model. */
export interface OpenFgaAuthzConfig {
  apiUrl: string;
  storeId: string;
  modelId?: string;
  apiToken?: string;
}

/** OpenFGA's default limit on tuple keys (writes plus deletes) in one Write call. */
const MAX_TUPLES_PER_WRITE = 100;
/** The largest page OpenFGA's Read accepts. */
const READ_PAGE_SIZE = 100;
/** An authorization decision sits on the request path: fail fast rather than hold the request. */
const TIMEOUT_MS = 3_000;
const MAX_RETRY = 2;

/**
 * OpenFGA refused or failed a request. `httpStatus` is OpenFGA's answer (undefined when no answer came) and
 * `apiCode` its error code (`validation_error`, `store_id_not_found`, …) or ours (`unreachable`, `client_error`).
 * Neither is named `status`/`code`, so the HTTP layer treats this as an internal error, not as the client's 4xx.
 */
/**
 * OpenFGA could not answer (unreachable, timed out, rate limited, or refusing the service's configuration). A
 * request that needed the decision is answered 503 with Retry-After, never 500; the message, which names the
 * store and the server, stays in the log.
 */
export class OpenFgaError extends ServiceUnavailableError {
  constructor(
    message: string,
    readonly httpStatus: number | undefined,
    readonly apiCode: string,
  ) {
    super(message, { code: CommonErrorCode.ServiceUnavailable, headers: { 'Retry-After': '5' } });
    this.name = 'OpenFgaError';
  }

  override get expose(): boolean {
    return false;
  }
}

function tupleKey(tuple: Tuple): Tuple {
  return { user: tuple.user, relation: tuple.relation, object: tuple.object };
}

function keyOf(tuple: Tuple): string {
  return `${tuple.object}#${tuple.relation}@${tuple.user}`;
}

function chunks<T>(items: T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

function unique(tuples: Tuple[]): Tuple[] {
  const byKey = new Map<string, Tuple>();
  for (const tuple of tuples) byKey.set(keyOf(tuple), tupleKey(tuple));
  return [...byKey.values()];
}

/** The URL for messages: any `user:password@` in it is a secret. */
function withoutCredentials(apiUrl: string): string {
  try {
    const url = new URL(apiUrl);
    return `${url.origin}${url.pathname.replace(/\/$/, '')}`;
  } catch {
    return '(invalid URL)';
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The embedded adapter's order (object type, object id, relation), then user, so both read alike. */
function byObjectThenRelation(a: Tuple, b: Tuple): number {
  const objectA = splitObject(a.object);
  const objectB = splitObject(b.object);
  return (
    compare(objectA.type, objectB.type) ||
    compare(objectA.id, objectB.id) ||
    compare(a.relation, b.relation) ||
    compare(a.user, b.user)
  );
}

function matches(tuple: Tuple, filter: TupleFilter): boolean {
  if (filter.user && tuple.user !== filter.user) return false;
  if (filter.relation && tuple.relation !== filter.relation) return false;
  if (filter.object) {
    if (filter.object.endsWith(':')) return tuple.object.startsWith(filter.object);
    if (tuple.object !== filter.object) return false;
  }
  return true;
}

/**
 * The authorization service backed by an OpenFGA store, which must hold this service's model
 * (`src/modules/authz/model.fga`). OpenFGA evaluates checks and listings; what OpenFGA cannot express is done
 * here: `acts_as` inheritance for service principals, reads by filters its Read API refuses, and removing every
 * tuple that names an entity. `model` is the local copy used to plan those (types and relations), not sent.
 */
/**
 * Whether an OpenFGA call failed for lack of OpenFGA (no answer, or a 5xx), rather than because OpenFGA refused
 * what was asked: what opens the breaker.
 */
export function isOpenFgaOutage(error: unknown): boolean {
  const { FgaApiError, FgaValidationError } = openFgaSdk();
  if (error instanceof FgaValidationError) return false;
  if (error instanceof FgaApiError) return (error.statusCode ?? 500) >= 500;
  return true;
}

export function createOpenFgaAuthz(
  config: OpenFgaAuthzConfig,
  model: AuthorizationModel,
  options: { breaker?: CircuitBreaker } = {},
): AuthzService {
  const client = openFgaClient(config, { maxRetry: MAX_RETRY, minWaitInMs: 50, timeoutMs: TIMEOUT_MS });

  const safeUrl = withoutCredentials(config.apiUrl);
  const relationsByType = new Map<string, string[]>(
    model.type_definitions.map((definition) => [definition.type, Object.keys(definition.relations ?? {})]),
  );
  const defines = (type: string, relation: string) => relationsByType.get(type)?.includes(relation) ?? false;

  /**
   * Runs one OpenFGA call and turns its failures into OpenFgaErrors. The messages name the operation, the
   * store and what OpenFGA said — never the API token, which the SDK's errors do not carry either.
   */
  async function call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await (options.breaker ? options.breaker.run(run) : run());
    } catch (error) {
      throw toOpenFgaError(operation, error);
    }
  }

  function toOpenFgaError(operation: string, error: unknown): OpenFgaError {
    const {
      FgaApiAuthenticationError,
      FgaApiError,
      FgaApiNotFoundError,
      FgaApiRateLimitExceededError,
      FgaApiValidationError,
      FgaValidationError,
      NotFoundErrorCode,
    } = openFgaSdk();
    const prefix = `OpenFGA ${operation} failed`;
    if (error instanceof CircuitOpenError) {
      return new OpenFgaError(
        `${prefix}: OpenFGA at ${safeUrl} is unreachable (not retried until the cool-down passes)`,
        undefined,
        'unreachable',
      );
    }
    if (error instanceof FgaApiNotFoundError) {
      return new OpenFgaError(
        error.apiErrorCode === NotFoundErrorCode.StoreIdNotFound
          ? `${prefix}: store ${config.storeId} not found`
          : `${prefix}: ${error.apiErrorMessage ?? 'not found'}`,
        error.statusCode,
        error.apiErrorCode ?? 'not_found',
      );
    }
    if (error instanceof FgaApiAuthenticationError) {
      return new OpenFgaError(
        `${prefix}: credentials rejected`,
        error.statusCode,
        error.apiErrorCode ?? 'unauthenticated',
      );
    }
    if (error instanceof FgaApiValidationError) {
      return new OpenFgaError(
        `${prefix}: ${error.apiErrorMessage ?? 'request rejected'}`,
        error.statusCode,
        error.apiErrorCode ?? 'validation_error',
      );
    }
    if (error instanceof FgaApiRateLimitExceededError) {
      return new OpenFgaError(`${prefix}: rate limited`, error.statusCode, error.apiErrorCode ?? 'rate_limited');
    }
    if (error instanceof FgaApiError) {
      const code = (error.responseData as { code?: unknown } | undefined)?.code;
      return new OpenFgaError(
        `${prefix}: OpenFGA answered ${error.statusCode ?? 'an error'}`,
        error.statusCode,
        typeof code === 'string' ? code : 'api_error',
      );
    }
    if (error instanceof FgaValidationError) {
      // Rejected by the SDK before sending: a malformed store or model id in the configuration.
      return new OpenFgaError(`${prefix}: ${error.message}`, undefined, 'client_error');
    }
    // Anything else is the network: refused, reset, timed out. The SDK's message is the socket error's.
    const reason = error instanceof Error ? error.message.replace(/^FGA Error: /, '') : String(error);
    return new OpenFgaError(`${prefix}: OpenFGA at ${safeUrl} is unreachable (${reason})`, undefined, 'unreachable');
  }

  /** Every tuple OpenFGA's Read returns for this key (or the whole store without one), following pages. */
  async function readPages(key: ReadRequestTupleKey | undefined): Promise<Tuple[]> {
    const tuples: Tuple[] = [];
    let continuationToken: string | undefined;
    do {
      const token = continuationToken;
      const page = await call('read', () =>
        client.read(key ?? {}, { pageSize: READ_PAGE_SIZE, ...(token && { continuationToken: token }) }),
      );
      for (const { key: found } of page.tuples) tuples.push(tupleKey(found));
      continuationToken = page.continuation_token || undefined;
    } while (continuationToken);
    return tuples;
  }

  /**
   * Read takes an object (`type:id`), or a type (`type:`) together with a user, or nothing at all. Other
   * filters are served from what it does take: a user alone is read type by type; a type, or a relation,
   * without a user is read from the whole store. Results are filtered here either way.
   */
  async function read(filter: TupleFilter): Promise<Tuple[]> {
    const { user, relation, object } = filter;
    let found: Tuple[];
    if (object) {
      const type = object.slice(0, object.indexOf(':'));
      // Writes are checked against the model, so no tuple can name an unknown type or relation.
      if (!relationsByType.has(type) || (relation && !defines(type, relation))) return [];
      const byType = object.endsWith(':');
      found =
        byType && !user
          ? await readPages(undefined)
          : await readPages({ object, ...(relation && { relation }), ...(user && { user }) });
    } else if (user) {
      const types = [...relationsByType.keys()].filter((type) => !relation || defines(type, relation));
      const perType = await Promise.all(
        types.map((type) => readPages({ object: `${type}:`, user, ...(relation && { relation }) })),
      );
      found = perType.flat();
    } else {
      found = await readPages(undefined);
    }
    return found.filter((tuple) => matches(tuple, filter)).sort(byObjectThenRelation);
  }

  async function directCheck(user: string, relation: string, object: string): Promise<boolean> {
    const result = await call('check', () => client.check({ user, relation, object }));
    return result.allowed === true;
  }

  /** The users a service principal acts as; OpenFGA stores the link but does not follow it. */
  async function delegatesOf(user: string): Promise<string[]> {
    if (user.includes('#') || splitObject(user).type !== 'service_principal') return [];
    const links = await readPages({ object: user, relation: 'acts_as' });
    // One level, as in the embedded evaluator: users do not act as anyone.
    return links.map((link) => link.user).filter((delegate) => delegate !== user);
  }

  async function change(kind: 'write' | 'delete', tuples: Tuple[]): Promise<void> {
    const { ClientWriteRequestOnDuplicateWrites, ClientWriteRequestOnMissingDeletes } = openFgaSdk();
    // OpenFGA refuses a request that names one tuple twice, and more than MAX_TUPLES_PER_WRITE tuples. Each
    // chunk is its own transaction: a failure part-way leaves earlier chunks applied, which is harmless because
    // writes and deletes are idempotent and the caller may simply retry.
    for (const chunk of chunks(unique(tuples), MAX_TUPLES_PER_WRITE)) {
      await call(kind, () =>
        client.write(kind === 'write' ? { writes: chunk } : { deletes: chunk }, {
          conflict: {
            onDuplicateWrites: ClientWriteRequestOnDuplicateWrites.Ignore,
            onMissingDeletes: ClientWriteRequestOnMissingDeletes.Ignore,
          },
        }),
      );
    }
  }

  return {
    provider: 'openfga',

    async check(user, relation, object) {
      // OpenFGA answers 400 for a relation its model lacks; the embedded evaluator answers no. Answer alike.
      if (!defines(splitObject(object).type, relation)) return false;
      if (await directCheck(user, relation, object)) return true;
      for (const delegate of await delegatesOf(user)) {
        if (await directCheck(delegate, relation, object)) return true;
      }
      return false;
    },

    write: (tuples) => change('write', tuples),
    delete: (tuples) => change('delete', tuples),
    read,

    async listObjects(user, relation, type) {
      if (!defines(type, relation)) return [];
      // OpenFGA caps ListObjects (1000 objects by default); listings are for the service's own small sets.
      const list = (subject: string) =>
        call('list-objects', () => client.listObjects({ user: subject, relation, type })).then((r) => r.objects);
      const objects = new Set(await list(user));
      for (const delegate of await delegatesOf(user)) {
        for (const object of await list(delegate)) objects.add(object);
      }
      return [...objects].sort();
    },

    async removeAllFor(entity) {
      const { type } = splitObject(entity);
      const users = [entity, ...(relationsByType.get(type) ?? []).map((relation) => `${entity}#${relation}`)];
      const found = [...(await read({ object: entity }))];
      for (const user of users) found.push(...(await read({ user })));
      const tuples = unique(found);
      await change('delete', tuples);
      return tuples.length;
    },

    healthCheck: () => openFgaHealthCheck({ provider: 'openfga', ...config }),
  };
}
