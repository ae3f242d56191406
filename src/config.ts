import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The operator contract: every setting comes from an environment variable (DESIGN.md §3). A JSON file named by
 * `CONFIG_FILE` may hold the same keys; the environment wins over the file. Invalid configuration is reported as
 * one message listing every bad key.
 */

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const port = (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback);
const optionalUrl = z.url({ protocol: /^https?$/ }).optional();
const optionalText = z.string().min(1).optional();
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const databaseUrl = z
  .string()
  .default('sqlite:./data/agent.db')
  .refine((v) => /^sqlite:.+/.test(v) || /^postgres(ql)?:\/\/.+/.test(v), {
    message: 'must be sqlite::memory:, sqlite:<path> or postgres://…',
  });

const redisUrl = z
  .string()
  .optional()
  .refine((v) => v === undefined || /^rediss?:\/\/.+/.test(v), { message: 'must be redis://… or rediss://…' });

/** A command the service may start as a stdio MCP server: its executable, arguments and environment. */
const stdioCommand = z.object({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  description: z.string().max(500).default(''),
});
export type StdioCommand = z.output<typeof stdioCommand>;
const stdioCommands = z.record(z.string().regex(/^[a-z][a-z0-9-]{0,39}$/), stdioCommand);

/** JSON written inline, or the path of a file holding it; undefined when neither parses. */
function readJsonOrFile(text: string): unknown {
  try {
    return JSON.parse(text.trim().startsWith('{') ? text : readFileSync(text, 'utf8'));
  } catch {
    return undefined;
  }
}

const ulid = z.string().regex(/^[0-9A-HJKMNP-TV-Z]{26}$/, 'must be a ULID');

const KEY_ENCRYPTION_KEY_BYTES = 32;

/**
 * The bytes of a key-encryption key written as hex (64 digits) or base64/base64url (43 or 44 characters), or
 * undefined when the text is neither or does not hold exactly 32 bytes.
 */
export function decodeKeyEncryptionKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  let bytes: Buffer;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) bytes = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)) bytes = Buffer.from(trimmed, 'base64');
  else return undefined;
  return bytes.length === KEY_ENCRYPTION_KEY_BYTES ? bytes : undefined;
}

const emailAddress = z.email('must be an email address').max(254);

/** The bootstrap administrator's address when ADMIN_EMAIL is unset: the username if it is one, else a placeholder. */
export function defaultAdminEmail(username: string): string {
  return emailAddress.safeParse(username).success ? username : `${username}@localhost.invalid`;
}

const envSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: port(8000),
  PLAYGROUND_PORT: port(8001),
  BUILDER_PORT: port(8002),
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  AUTH_MODE: z.enum(['token', 'session']).default('token'),
  AUTH_PROVIDER: z.enum(['local', 'oidc']).default('local'),
  OIDC_ISSUER_URL: optionalUrl,
  OIDC_CLIENT_ID: optionalText,
  OIDC_CLIENT_SECRET: optionalText,
  OIDC_REDIRECT_URI: optionalUrl,
  MCP_AUTHORIZATION_SERVER: z.enum(['service', 'identity_provider']).optional(),
  MCP_TOKEN_AUDIENCE: optionalText,
  MCP_CLIENT_METADATA_PRIVATE_HOSTS: optionalText,
  AUTHZ_PROVIDER: z.enum(['embedded', 'openfga']).default('embedded'),
  OPENFGA_API_URL: optionalUrl,
  OPENFGA_STORE_ID: ulid.optional(),
  OPENFGA_MODEL_ID: ulid.optional(),
  OPENFGA_API_TOKEN: optionalText,
  LLM_PROVIDER: z.enum(['offline', 'openai']).default('offline'),
  LLM_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://api.openai.com/v1'),
  LLM_API_KEY: optionalText,
  LLM_MODEL: optionalText,
  OFFLINE_LLM_WORD_DELAY_MS: z.coerce.number().int().min(0).max(10_000).default(0),
  ADMIN_USERNAME: z.string().min(1).max(64).default('admin'),
  ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  ADMIN_EMAIL: emailAddress.optional(),
  KEY_ENCRYPTION_KEY: z
    .string()
    .refine((v) => decodeKeyEncryptionKey(v) !== undefined, {
      message: 'must be 32 bytes written as base64, base64url or hex (openssl rand -base64 32)',
    })
    .optional(),
  NODE_ENV: z.string().optional(),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  PLAYGROUND_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d+|[\w.:/]+(\s*,\s*[\w.:/]+)*)$/, {
      message: 'must be true, false, a hop count, or a comma-separated list of addresses, subnets or loopback',
    })
    .optional(),
  REDIS_PREFIX: z.string().max(64).default('agent:'),
  REDIS_OUTAGE_GRACE_SECONDS: z.coerce.number().int().min(0).max(3_600).default(60),
  ACCESS_TOKEN_TTL_SECONDS: positiveInt(900),
  REFRESH_TOKEN_TTL_SECONDS: positiveInt(2_592_000),
  SESSION_IDLE_TIMEOUT_SECONDS: positiveInt(1_800),
  SESSION_ABSOLUTE_TIMEOUT_SECONDS: positiveInt(86_400),
  SESSION_MAX_CONCURRENT: z.coerce.number().int().min(1).max(100).default(5),
  LOGIN_MAX_FAILURES: positiveInt(5),
  LOGIN_FAILURE_WINDOW_SECONDS: positiveInt(900),
  LOGIN_MAX_FAILURES_PER_ADDRESS: positiveInt(50),
  MCP_REQUESTS_PER_MINUTE: positiveInt(100),
  MCP_TOOL_CALLS_PER_MINUTE: positiveInt(30),
  MCP_MAX_CONCURRENT_STREAMS: positiveInt(10),
  MCP_SESSION_IDLE_SECONDS: positiveInt(1_800),
  MCP_MAX_SESSIONS: positiveInt(10_000),
  MCP_TASK_TTL_SECONDS: positiveInt(86_400),
  MCP_SESSION_MODE: z.enum(['stateful', 'stateless']).default('stateful'),
  MCP_HTTP_TRANSPORT: z.enum(['native', 'sdk']).default('native'),
  STDIO_USER: z.string().min(1).max(254).optional(),
  STDIO_API_KEY: z.string().min(1).max(256).optional(),
  SEARCH_URL: optionalUrl,
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  OTEL_SERVICE_NAME: z.string().min(1).max(128).default('agent-service'),
  CONNECTIONS_PRIVATE_HOSTS: optionalText,
  CONNECTIONS_STDIO_COMMANDS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined || text.trim() === '') return {};
      const parsed = stdioCommands.safeParse(readJsonOrFile(text));
      if (parsed.success) return parsed.data;
      ctx.addIssue({
        code: 'custom',
        message:
          'must be a JSON object (or the path of a JSON file) of {"<name>": {"command", "args"?, "env"?, "description"?}}',
      });
      return z.NEVER;
    }),
  CONNECTIONS_TIMEOUT_MS: positiveInt(30_000),
  CONNECTIONS_MAX_RESPONSE_BYTES: positiveInt(4 * 1024 * 1024),
  PLAYGROUND_MAX_MESSAGE_CHARS: positiveInt(32_000),
  PLAYGROUND_WS_AUTH_TIMEOUT_MS: positiveInt(5_000),
  PLAYGROUND_WS_HEARTBEAT_MS: positiveInt(25_000),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  BODY_LIMIT_BYTES: positiveInt(1_048_576),
  SHUTDOWN_TIMEOUT_MS: positiveInt(5_000),
  HEALTH_CACHE_MS: z.coerce.number().int().min(0).default(1_000),
  AUTHZ_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
});
/** Every setting the service reads from its environment. */
export const CONFIG_KEYS: readonly string[] = Object.keys(envSchema.shape);

/**
 * Rules between keys. They read the raw values, so that they are reported together with type errors (zod runs
 * refinements only on input that already parsed).
 */
function crossKeyProblems(raw: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const need = (when: boolean, keys: string[], why: string) => {
    if (!when) return;
    for (const key of keys) if (raw[key] === undefined) problems.push(`${key}: is required when ${why}`);
  };
  need(
    raw.AUTH_PROVIDER === 'oidc',
    ['OIDC_ISSUER_URL', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_REDIRECT_URI'],
    'AUTH_PROVIDER=oidc',
  );
  if (raw.MCP_AUTHORIZATION_SERVER === 'identity_provider' && raw.AUTH_PROVIDER !== 'oidc')
    problems.push('MCP_AUTHORIZATION_SERVER: identity_provider needs AUTH_PROVIDER=oidc');
  need(raw.AUTHZ_PROVIDER === 'openfga', ['OPENFGA_API_URL', 'OPENFGA_STORE_ID'], 'AUTHZ_PROVIDER=openfga');
  need(raw.LLM_PROVIDER === 'openai', ['LLM_MODEL'], 'LLM_PROVIDER=openai');
  // A production installation must not keep the key that protects its signing keys beside the database.
  need(raw.NODE_ENV === 'production', ['KEY_ENCRYPTION_KEY'], 'NODE_ENV=production');
  if (raw.ADMIN_EMAIL === undefined && typeof raw.ADMIN_USERNAME === 'string') {
    const derived = defaultAdminEmail(raw.ADMIN_USERNAME);
    if (!emailAddress.safeParse(derived).success) {
      problems.push(`ADMIN_EMAIL: is required: ${derived}, derived from ADMIN_USERNAME, is not an email address`);
    }
  }

  const defaults: Record<string, number> = { PORT: 8000, PLAYGROUND_PORT: 8001, BUILDER_PORT: 8002 };
  const ports = Object.entries(defaults).map(
    ([key, fallback]) => [key, raw[key] === undefined ? fallback : Number(raw[key])] as const,
  );
  for (const [i, [key, value]] of ports.entries()) {
    const clash = ports.slice(0, i).find(([, other]) => other === value && value !== 0 && Number.isInteger(value));
    if (clash) problems.push(`${key}: must differ from ${clash[0]} (${value})`);
  }
  return problems;
}

export type Env = z.infer<typeof envSchema>;

export type DatabaseTarget =
  { dialect: 'sqlite'; filename: string } | { dialect: 'postgres'; connectionString: string };

export interface Config {
  /** NODE_ENV=production: generated development defaults (such as the key-encryption key) are refused. */
  production: boolean;
  host: string;
  ports: { main: number; playground: number; builder: number };
  /** Base URL of the main listener as clients reach it: the token issuer, and https means Secure cookies. */
  publicUrl: string;
  /** Base URL of the playground as people reach it (where they are sent to connect an account), when set. */
  playgroundPublicUrl: string | undefined;
  /** Express `trust proxy` setting: whose X-Forwarded-For to believe for client addresses. */
  trustProxy: boolean | number | string;
  database: DatabaseTarget;
  /**
   * Redis, when configured. `outageGraceSeconds`: how long into an outage an access token whose session this
   * instance last saw live is still accepted (0: refuse at once with 503).
   */
  redis: { url: string; prefix: string; outageGraceSeconds: number } | undefined;
  auth: {
    mode: 'token' | 'session';
    provider: 'local' | 'oidc';
    oidc?: { issuerUrl: string; clientId: string; clientSecret: string; redirectUri: string };
    /**
     * Who MCP clients get their tokens from: the service's own authorization server (which signs users in with a
     * password or single sign-on), or the identity provider directly (its access tokens are then accepted on the
     * MCP wires, for `mcpTokenAudience`).
     */
    mcpAuthorizationServer: 'service' | 'identity_provider';
    /** The audience an identity provider's access token must name to be accepted on the MCP wires. */
    mcpTokenAudience: string;
    /** Hosts whose MCP client metadata documents may be fetched although they resolve to private addresses. */
    clientMetadataPrivateHosts: string[];
    adminUsername: string;
    adminPassword: string | undefined;
    /** The bootstrap administrator's email address, filled in on start when the account has none. */
    adminEmail: string;
    /** Encrypts the signing keys' private halves at rest; generated beside a SQLite database in development. */
    keyEncryptionKey: Buffer | undefined;
    accessTokenTtlSeconds: number;
    refreshTokenTtlSeconds: number;
    session: { idleTimeoutSeconds: number; absoluteTimeoutSeconds: number; maxConcurrent: number };
    login: { maxFailures: number; failureWindowSeconds: number; maxFailuresPerAddress: number };
  };
  authz:
    | { provider: 'embedded' }
    | { provider: 'openfga'; apiUrl: string; storeId: string; modelId?: string; apiToken?: string };
  llm:
    | { provider: 'offline'; wordDelayMs: number }
    | { provider: 'openai'; baseUrl: string; apiKey?: string; model: string };
  mcp: {
    requestsPerMinute: number;
    toolCallsPerMinute: number;
    maxConcurrentStreams: number;
    sessionIdleSeconds: number;
    maxSessions: number;
    /** How long an MCP task (2026-07-28 Tasks extension) is kept after it starts, finished or not. */
    taskTtlSeconds: number;
    /**
     * Streamable HTTP: `stateful` sessions (`Mcp-Session-Id`, server-initiated streams, resumability) live in the
     * instance that opened them; `stateless` answers every POST on its own, so any instance serves any request.
     */
    sessionMode: 'stateful' | 'stateless';
    /** Streamable HTTP through the service's own Node transport (`native`) or the SDK's web-standard one (`sdk`). */
    httpTransport: 'native' | 'sdk';
    /** Who `agent-service stdio` acts as: a username, or an API key; by default the bootstrap administrator. */
    stdio: { username?: string; apiKey?: string };
  };
  /** Other MCP servers the service connects to as a client. */
  connections: {
    /** Hosts and CIDR ranges outbound requests may reach though private or loopback ('*': any). */
    privateHosts: string[];
    /** The commands an administrator may run as stdio servers, by name: never a command line from a request. */
    stdioCommands: Record<string, StdioCommand>;
    /** How long an upstream has to answer (headers of an HTTP response, a tool call). */
    timeoutMs: number;
    /** The largest upstream response read (an HTTP body, a stdio message), in bytes. */
    maxResponseBytes: number;
  };
  /** A SearXNG instance for `search_web`; without it the service searches its own conversations. */
  searchUrl: string | undefined;
  /** OpenTelemetry: spans are kept for the playground, and exported over OTLP/HTTP when an endpoint is set. */
  telemetry: { serviceName: string; otlpEndpoint: string | undefined };
  playground: {
    /** The longest chat message accepted (characters). */
    maxMessageChars: number;
    /** How long a playground WebSocket may stay open without its `auth` message. */
    wsAuthTimeoutMs: number;
    /** How often the server pings a playground WebSocket. */
    wsHeartbeatMs: number;
  };
  logLevel: (typeof LOG_LEVELS)[number];
  bodyLimitBytes: number;
  shutdownTimeoutMs: number;
  healthCacheMs: number;
  /** How long an authorization decision is reused (0: never); another instance's change is seen within it. */
  authzCacheMs: number;
}

/** Thrown when configuration is invalid; `problems` holds one line per bad key. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const ENV_KEYS = Object.keys(envSchema.shape) as (keyof Env)[];

/** Reads the keys we know from a source, dropping empty strings so that `PORT=` means "use the default". */
function pickKnown(source: Record<string, unknown>): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const key of ENV_KEYS) {
    const value = source[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  return picked;
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`CONFIG_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    const values = parsed as Record<string, unknown>;
    const unknownKeys = Object.keys(values).filter((k) => !(ENV_KEYS as string[]).includes(k));
    if (unknownKeys.length > 0) {
      throw new ConfigError(unknownKeys.map((k) => `${k}: unknown key in CONFIG_FILE ${path}`));
    }
    // The file may use JSON numbers; the schema coerces from strings as the environment would.
    return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === 'number' ? String(v) : v]));
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError([`CONFIG_FILE: ${path} is not a JSON object of settings`]);
  }
}

/** A comma-separated list, trimmed, without empty items. */
function listOf(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function toTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

function toDatabaseTarget(url: string): DatabaseTarget {
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', filename: url.slice('sqlite:'.length) };
  return { dialect: 'postgres', connectionString: url };
}

/** Validates the environment (and the optional CONFIG_FILE) into a typed Config, or throws ConfigError. */
export function loadConfig(environment: Record<string, string | undefined> = process.env): Config {
  const fromFile = environment.CONFIG_FILE ? readConfigFile(environment.CONFIG_FILE) : {};
  const raw = { ...pickKnown(fromFile), ...pickKnown(environment) };
  const result = envSchema.safeParse(raw);
  const problems = [
    ...(result.success
      ? []
      : result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)),
    ...crossKeyProblems(raw),
  ];
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  const env = result.data;
  const publicUrl = (
    env.PUBLIC_URL ?? `http://${env.HOST.includes(':') ? `[${env.HOST}]` : env.HOST}:${env.PORT}`
  ).replace(/\/$/, '');
  return {
    production: env.NODE_ENV === 'production',
    host: env.HOST,
    ports: { main: env.PORT, playground: env.PLAYGROUND_PORT, builder: env.BUILDER_PORT },
    publicUrl,
    playgroundPublicUrl: env.PLAYGROUND_PUBLIC_URL && `${env.PLAYGROUND_PUBLIC_URL.replace(/\/$/, '')}/`,
    trustProxy: toTrustProxy(env.TRUST_PROXY),
    database: toDatabaseTarget(env.DATABASE_URL),
    redis: env.REDIS_URL
      ? { url: env.REDIS_URL, prefix: env.REDIS_PREFIX, outageGraceSeconds: env.REDIS_OUTAGE_GRACE_SECONDS }
      : undefined,
    auth: {
      mode: env.AUTH_MODE,
      provider: env.AUTH_PROVIDER,
      ...(env.AUTH_PROVIDER === 'oidc' && {
        oidc: {
          issuerUrl: env.OIDC_ISSUER_URL!,
          clientId: env.OIDC_CLIENT_ID!,
          clientSecret: env.OIDC_CLIENT_SECRET!,
          redirectUri: env.OIDC_REDIRECT_URI!,
        },
      }),
      mcpAuthorizationServer:
        env.MCP_AUTHORIZATION_SERVER ?? (env.AUTH_PROVIDER === 'oidc' ? 'identity_provider' : 'service'),
      mcpTokenAudience: env.MCP_TOKEN_AUDIENCE ?? `${publicUrl}/mcp`,
      clientMetadataPrivateHosts: listOf(env.MCP_CLIENT_METADATA_PRIVATE_HOSTS),
      adminUsername: env.ADMIN_USERNAME,
      adminPassword: env.ADMIN_PASSWORD,
      adminEmail: env.ADMIN_EMAIL ?? defaultAdminEmail(env.ADMIN_USERNAME),
      keyEncryptionKey:
        env.KEY_ENCRYPTION_KEY === undefined ? undefined : decodeKeyEncryptionKey(env.KEY_ENCRYPTION_KEY),
      accessTokenTtlSeconds: env.ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: env.REFRESH_TOKEN_TTL_SECONDS,
      session: {
        idleTimeoutSeconds: env.SESSION_IDLE_TIMEOUT_SECONDS,
        absoluteTimeoutSeconds: env.SESSION_ABSOLUTE_TIMEOUT_SECONDS,
        maxConcurrent: env.SESSION_MAX_CONCURRENT,
      },
      login: {
        maxFailures: env.LOGIN_MAX_FAILURES,
        failureWindowSeconds: env.LOGIN_FAILURE_WINDOW_SECONDS,
        maxFailuresPerAddress: env.LOGIN_MAX_FAILURES_PER_ADDRESS,
      },
    },
    authz:
      env.AUTHZ_PROVIDER === 'openfga'
        ? {
            provider: 'openfga',
            apiUrl: env.OPENFGA_API_URL!,
            storeId: env.OPENFGA_STORE_ID!,
            ...(env.OPENFGA_MODEL_ID && { modelId: env.OPENFGA_MODEL_ID }),
            ...(env.OPENFGA_API_TOKEN && { apiToken: env.OPENFGA_API_TOKEN }),
          }
        : { provider: 'embedded' },
    llm:
      env.LLM_PROVIDER === 'openai'
        ? {
            provider: 'openai',
            baseUrl: env.LLM_BASE_URL,
            model: env.LLM_MODEL!,
            ...(env.LLM_API_KEY && { apiKey: env.LLM_API_KEY }),
          }
        : { provider: 'offline', wordDelayMs: env.OFFLINE_LLM_WORD_DELAY_MS },
    mcp: {
      requestsPerMinute: env.MCP_REQUESTS_PER_MINUTE,
      toolCallsPerMinute: env.MCP_TOOL_CALLS_PER_MINUTE,
      maxConcurrentStreams: env.MCP_MAX_CONCURRENT_STREAMS,
      sessionIdleSeconds: env.MCP_SESSION_IDLE_SECONDS,
      maxSessions: env.MCP_MAX_SESSIONS,
      taskTtlSeconds: env.MCP_TASK_TTL_SECONDS,
      sessionMode: env.MCP_SESSION_MODE,
      httpTransport: env.MCP_HTTP_TRANSPORT,
      stdio: {
        ...(env.STDIO_USER && { username: env.STDIO_USER }),
        ...(env.STDIO_API_KEY && { apiKey: env.STDIO_API_KEY }),
      },
    },
    connections: {
      privateHosts: listOf(env.CONNECTIONS_PRIVATE_HOSTS),
      stdioCommands: env.CONNECTIONS_STDIO_COMMANDS,
      timeoutMs: env.CONNECTIONS_TIMEOUT_MS,
      maxResponseBytes: env.CONNECTIONS_MAX_RESPONSE_BYTES,
    },
    searchUrl: env.SEARCH_URL,
    telemetry: { serviceName: env.OTEL_SERVICE_NAME, otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT },
    playground: {
      maxMessageChars: env.PLAYGROUND_MAX_MESSAGE_CHARS,
      wsAuthTimeoutMs: env.PLAYGROUND_WS_AUTH_TIMEOUT_MS,
      wsHeartbeatMs: env.PLAYGROUND_WS_HEARTBEAT_MS,
    },
    logLevel: env.LOG_LEVEL,
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    healthCacheMs: env.HEALTH_CACHE_MS,
    authzCacheMs: env.AUTHZ_CACHE_MS,
  };
}
