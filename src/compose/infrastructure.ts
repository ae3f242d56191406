import type { Redis } from 'ioredis';
import { cachingDecisions } from '../adapters/authz/cached.js';
import { createEmbeddedAuthz } from '../adapters/authz/embedded.js';
import { createOpenFgaAuthz, isOpenFgaOutage } from '../adapters/authz/openfga.js';
import type { AuthzService } from '../adapters/authz/port.js';
import { createMemoryCounterStore } from '../adapters/counters/memory.js';
import type { CounterStore } from '../adapters/counters/port.js';
import { createRedisCounterStore } from '../adapters/counters/redis.js';
import { createMemoryEphemeralStore } from '../adapters/ephemeral/memory.js';
import type { EphemeralStore } from '../adapters/ephemeral/port.js';
import { createRedisEphemeralStore } from '../adapters/ephemeral/redis.js';
import { localIdentityHealthCheck, oidcIdentityHealthCheck } from '../adapters/identity/health.js';
import { createOfflineLlm } from '../adapters/llm/offline.js';
import { createOpenAiLlm, isLlmOutage } from '../adapters/llm/openai.js';
import type { LlmProvider } from '../adapters/llm/port.js';
import { createRedisClient } from '../adapters/redis/redis.js';
import {
  degradableCounterStore,
  degradableEphemeralStore,
  degradableSessionStore,
} from '../adapters/redis/degraded.js';
import { RedisOutage } from '../adapters/redis/outage.js';
import type { Broadcast } from '../adapters/broadcast/port.js';
import { createMemoryBroadcast } from '../adapters/broadcast/memory.js';
import { createRedisBroadcast } from '../adapters/broadcast/redis.js';
import { createEmbeddedSearch } from '../adapters/search/embedded.js';
import type { ConversationSearcher, WebSearch } from '../adapters/search/port.js';
import { createSearxngSearch } from '../adapters/search/searxng.js';
import { memorySessionStoreHealthCheck, redisSessionStoreHealthCheck } from '../adapters/session-store/health.js';
import { createMemorySessionStore } from '../adapters/session-store/memory.js';
import type { SessionStore } from '../adapters/session-store/port.js';
import { createRedisSessionStore } from '../adapters/session-store/redis.js';
import { createTelemetry } from '../adapters/telemetry/otel.js';
import type { Telemetry } from '../adapters/telemetry/port.js';
import type { Config } from '../config.js';
import { SERVICE_VERSION } from '../version.js';
import { type Db, createDb } from '../db/create-db.js';
import { databaseHealthCheck } from '../db/health.js';
import type { Logger } from '../logger.js';
import { CircuitBreaker } from '../adapters/breaker/breaker.js';
import { isUnreachableDependency } from '../errors.js';
import { authorizationModel } from '../modules/authz/index.js';
import type { HealthCheck } from '../ports/health.js';

export interface Stores {
  sessions: SessionStore;
  counters: CounterStore;
  ephemeral: EphemeralStore;
}

/** The adapters the configuration picks: each port's embedded default, or the real service it names. */
export interface Infrastructure {
  db: Db;
  redis: Redis | undefined;
  stores: Stores;
  authz: AuthzService;
  llm: LlmProvider;
  /** Web search; the embedded default searches the documentation and the caller's conversations. */
  search(conversations: ConversationSearcher): WebSearch;
  /** OpenTelemetry: this app's tracer, exported over OTLP when configured. */
  telemetry: Telemetry;
  /** Signals to every instance (through Redis pub/sub when configured). */
  broadcast: Broadcast;
  /** The checks of every dependency built here (database, session store, authorization, identity, LLM). */
  healthChecks: HealthCheck[];
  /** A circuit breaker per connected MCP server, made on first use. */
  breakerFor(connectionId: string): CircuitBreaker;
}

/** Failures of an upstream's connection, by the MCP SDK's codes and the socket's. */
const UPSTREAM_UNREACHABLE =
  /^(CONNECTION_CLOSED|SEND_FAILED|NOT_CONNECTED|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN)$/;

/**
 * Whether an upstream MCP server's failure says it is out of reach (refused or dropped connections, no response
 * headers in time), rather than an answer of its own: a JSON-RPC error, a result that fails its schema, one call
 * that took too long or was too large, or a request the outbound guard refused leave the breaker closed.
 */
function isUpstreamOutage(error: unknown): boolean {
  const { code, limit, message, cause } = error as {
    code?: unknown;
    limit?: unknown;
    message?: unknown;
    cause?: unknown;
  };
  if (code === 'outbound_limit') return limit === 'timeout';
  if (typeof code === 'string' && UPSTREAM_UNREACHABLE.test(code)) return true;
  if (typeof (cause as { code?: unknown } | undefined)?.code === 'string')
    return UPSTREAM_UNREACHABLE.test((cause as { code: string }).code);
  return typeof message === 'string' && /fetch failed|connection closed|socket hang up/i.test(message);
}

export function buildInfrastructure(config: Config, deps: { logger: Logger; now: () => Date }): Infrastructure {
  const { logger, now } = deps;
  const clock = { now: () => now().getTime() };
  const db = createDb(config.database, {
    breaker: new CircuitBreaker({ dependency: 'database', ...clock, logger, isOutage: isUnreachableDependency }),
    onConnectionError: (err) => logger.warn({ err, dependency: 'database' }, 'database connection lost'),
  });
  const redis = config.redis ? createRedisClient(config.redis.url, logger) : undefined;
  // Every Redis call goes through one breaker: an outage is a 503 (or a stand-in), never a 500 or a pile-up.
  const outage = redis ? new RedisOutage({ now: clock.now, logger }) : undefined;
  if (redis && outage) redis.on('ready', () => outage.reconnected());
  const stores: Stores =
    redis && config.redis && outage
      ? {
          sessions: degradableSessionStore(
            createRedisSessionStore(redis, { prefix: config.redis.prefix, ...clock }),
            outage,
            { graceMs: config.redis.outageGraceSeconds * 1000, now: clock.now },
          ),
          counters: degradableCounterStore(
            createRedisCounterStore(redis, { prefix: config.redis.prefix, ...clock }),
            outage,
            clock.now,
          ),
          ephemeral: degradableEphemeralStore(
            createRedisEphemeralStore(redis, { prefix: config.redis.prefix, ...clock }),
            outage,
          ),
        }
      : {
          sessions: createMemorySessionStore(clock),
          counters: createMemoryCounterStore(clock),
          ephemeral: createMemoryEphemeralStore(clock),
        };
  const tuples =
    config.authz.provider === 'openfga'
      ? createOpenFgaAuthz(config.authz, authorizationModel(), {
          breaker: new CircuitBreaker({
            dependency: 'authorization service',
            ...clock,
            logger,
            isOutage: isOpenFgaOutage,
          }),
        })
      : createEmbeddedAuthz(db, authorizationModel(), now);
  const authz = config.authzCacheMs > 0 ? cachingDecisions(tuples, { ttlMs: config.authzCacheMs }) : tuples;
  const llm =
    config.llm.provider === 'openai'
      ? createOpenAiLlm(
          {
            baseUrl: config.llm.baseUrl,
            model: config.llm.model,
            ...(config.llm.apiKey && { apiKey: config.llm.apiKey }),
          },
          { breaker: new CircuitBreaker({ dependency: 'LLM provider', ...clock, logger, isOutage: isLlmOutage }) },
        )
      : createOfflineLlm({ wordDelayMs: config.llm.wordDelayMs });
  const telemetry = createTelemetry({
    serviceName: config.telemetry.serviceName,
    serviceVersion: SERVICE_VERSION,
    ...(config.telemetry.otlpEndpoint && { otlpEndpoint: config.telemetry.otlpEndpoint }),
  });
  const upstreamBreakers = new Map<string, CircuitBreaker>();
  return {
    breakerFor(connectionId) {
      let breaker = upstreamBreakers.get(connectionId);
      if (!breaker) {
        if (upstreamBreakers.size >= 10_000) upstreamBreakers.clear();
        breaker = new CircuitBreaker({
          dependency: 'connected MCP server',
          ...clock,
          logger,
          isOutage: isUpstreamOutage,
          cooldownMs: 2_000,
          retryAfterSeconds: 2,
        });
        upstreamBreakers.set(connectionId, breaker);
      }
      return breaker;
    },
    db,
    redis,
    telemetry,
    stores,
    broadcast:
      redis && config.redis && outage
        ? createRedisBroadcast(redis, { prefix: config.redis.prefix, outage })
        : createMemoryBroadcast(),
    authz,
    llm,
    search: (conversations) =>
      config.searchUrl ? createSearxngSearch(config.searchUrl) : createEmbeddedSearch(conversations),
    healthChecks: [
      databaseHealthCheck(db),
      redis && config.redis && outage
        ? redisSessionStoreHealthCheck(redis, config.redis.url, {
            breaker: outage,
            graceSeconds: config.redis.outageGraceSeconds,
          })
        : memorySessionStoreHealthCheck(),
      authz.healthCheck(),
      config.auth.oidc ? oidcIdentityHealthCheck(config.auth.oidc) : localIdentityHealthCheck(db),
      llm.healthCheck(),
    ],
  };
}
