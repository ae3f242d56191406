import { createRequire } from 'node:module';
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import type * as Undici from 'undici';

/**
 * The outbound request guard: every HTTP request the connections module sends to another server (OAuth discovery,
 * client registration, token requests, MCP streamable HTTP and SSE) goes through it, because the URLs come from
 * users and from remote servers, and must not become a way into the service's own network (SSRF).
 */

export interface OutboundPolicy {
  /** Hosts (DNS names or IP literals) and CIDR ranges (e.g. '127.0.0.1', '10.0.0.0/8', '::1', 'localhost') that may be reached although they are private, loopback or link-local; '*' allows every address. */
  privateHosts: readonly string[];
  /** Time allowed until the response headers arrive, in ms (the body of a stream may take longer). */
  timeoutMs: number;
  /** The largest response body read, in bytes; a longer body errors the stream with OutboundLimitError. */
  maxResponseBytes: number;
  /** Redirects followed at most (default 5). */
  maxRedirects?: number;
}

/** The shape of `fetch` that the MCP SDK transports and OAuth helpers accept as their `fetch` option. */
export type OutboundFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** A request the guard would not send (scheme, address, redirect target). */
export class OutboundRefusedError extends Error {
  readonly code = 'outbound_refused';
  override readonly name = 'OutboundRefusedError';
}

/** A response cut off at a limit (time to headers, body size). */
export class OutboundLimitError extends Error {
  readonly code = 'outbound_limit';
  override readonly name = 'OutboundLimitError';

  constructor(
    readonly limit: 'timeout' | 'size',
    message: string,
  ) {
    super(message);
  }
}

const DEFAULT_MAX_REDIRECTS = 5;
const ALLOW_HINT = 'allow it in CONNECTIONS_PRIVATE_HOSTS';
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Statuses a `Response` must be built without a body for. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
/** Headers that describe the request body, dropped with it when a redirect turns the request into a GET. */
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
/** Headers that carry the caller's credentials, which must not follow a redirect to another origin. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];

/**
 * Addresses refused unless privateHosts allows them, by the kind an error message names. Beyond the loopback,
 * private and link-local ranges, the list holds everything that is not an ordinary unicast address on the
 * internet, since no MCP server has a reason to live there and each has been used to reach what it should not.
 */
const REFUSED_RANGES: readonly { kind: string; v4: [string, number][]; v6: [string, number][] }[] = [
  { kind: 'a loopback address', v4: [['127.0.0.0', 8]], v6: [['::1', 128]] },
  { kind: 'an unspecified address', v4: [['0.0.0.0', 8]], v6: [['::', 128]] },
  {
    kind: 'a private address',
    v4: [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
    ],
    // Unique-local, the deprecated site-local, and the local-use NAT64 prefix (RFC 8215), which translates to
    // whatever the operator's IPv4 network holds.
    v6: [
      ['fc00::', 7],
      ['fec0::', 10],
      ['64:ff9b:1::', 48],
    ],
  },
  { kind: 'a link-local address', v4: [['169.254.0.0', 16]], v6: [['fe80::', 10]] },
  { kind: 'a shared (CGNAT) address', v4: [['100.64.0.0', 10]], v6: [] },
  { kind: 'a multicast address', v4: [['224.0.0.0', 4]], v6: [['ff00::', 8]] },
  {
    kind: 'a reserved address',
    v4: [
      ['192.0.0.0', 24], // IETF protocol assignments
      ['192.0.2.0', 24], // documentation
      ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
      ['198.18.0.0', 15], // benchmarking
      ['198.51.100.0', 24], // documentation
      ['203.0.113.0', 24], // documentation
      ['240.0.0.0', 4], // reserved, and the broadcast address
    ],
    v6: [
      ['::', 96], // IPv4-compatible (deprecated); ::ffff:0:0/96 and the other embeddings are judged by their IPv4
      ['100::', 64], // discard-only
      ['2001::', 32], // Teredo: the IPv4 inside is obfuscated, so it cannot be judged
      ['2001:db8::', 32], // documentation
    ],
  },
];

const REFUSED = REFUSED_RANGES.map(({ kind, v4, v6 }) => {
  const list = new BlockList();
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4');
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6');
  return { kind, list };
});

/** privateHosts, compiled. */
interface AllowRules {
  all: boolean;
  names: ReadonlySet<string>;
  addresses: BlockList;
}

/**
 * Throws at once on an entry that means nothing, so that a typo in the configuration is found at start-up and not
 * as a connection that is mysteriously refused.
 */
function compileAllowRules(privateHosts: readonly string[]): AllowRules {
  const rules = { all: false, names: new Set<string>(), addresses: new BlockList() };
  for (const raw of privateHosts) {
    const entry = raw.trim();
    if (entry === '') continue;
    if (entry === '*') {
      rules.all = true;
      continue;
    }
    const invalid = new Error(
      `Invalid private host '${raw}': expected a host name, an IP address, a CIDR range (10.0.0.0/8) or '*'`,
    );
    const slash = entry.indexOf('/');
    if (slash >= 0) {
      const network = unbracket(entry.slice(0, slash));
      const prefixText = entry.slice(slash + 1);
      const family = isIP(network);
      const prefix = Number(prefixText);
      if (family === 0 || !/^\d{1,3}$/.test(prefixText) || prefix > (family === 4 ? 32 : 128)) throw invalid;
      rules.addresses.addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
      continue;
    }
    const literal = unbracket(entry);
    if (isIP(literal) !== 0) {
      rules.addresses.addAddress(literal, isIP(literal) === 4 ? 'ipv4' : 'ipv6');
      continue;
    }
    // Parsed as a URL host so that the name compares as the URL parser will spell it (lower case, punycode), and
    // so that a port or a path in the entry is caught.
    let parsed: URL;
    try {
      parsed = new URL(`http://${entry}`);
    } catch {
      throw invalid;
    }
    if (parsed.port || parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username) throw invalid;
    const host = normalizeHost(parsed.hostname);
    if (isIP(host) === 4) rules.addresses.addAddress(host, 'ipv4');
    else rules.names.add(host);
  }
  return rules;
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** A URL's hostname as it is compared: without IPv6 brackets or a trailing dot (`localhost.` is `localhost`). */
function normalizeHost(hostname: string): string {
  return unbracket(hostname).toLowerCase().replace(/\.$/, '');
}

/** The eight 16-bit groups of an IPv6 address, whatever its spelling (compressed, with an IPv4 tail, a zone). */
function ipv6Groups(address: string): number[] {
  // The URL parser canonicalises any spelling to compressed hex, so only `::` is left to expand.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one that decides where the packets go: IPv4-mapped
 * (::ffff:10.0.0.1 is 10.0.0.1 to a dual-stack socket), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 */
function embeddedIPv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  const dotted = (high: number, low: number): string => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return dotted(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return dotted(g6, g7);
  if (g0 === 0x2002) return dotted(g1 ?? 0, g2 ?? 0);
  return undefined;
}

/** The IPv4 address judged for `address` (itself, or the one an IPv6 address embeds), else undefined. */
function ipv4Of(address: string): string | undefined {
  return isIP(address) === 4 ? address : embeddedIPv4(address);
}

/** What kind of refused address this is (`a private address`…), or undefined for an ordinary public one. */
function refusedKind(address: string): string | undefined {
  const v4 = ipv4Of(address);
  for (const { kind, list } of REFUSED) {
    if (v4 !== undefined ? list.check(v4, 'ipv4') : list.check(address, 'ipv6')) return kind;
  }
  return undefined;
}

function allowsAddress(rules: AllowRules, address: string): boolean {
  if (rules.all) return true;
  const v4 = ipv4Of(address);
  if (v4 !== undefined && rules.addresses.check(v4, 'ipv4')) return true;
  return isIP(address) === 6 && rules.addresses.check(address, 'ipv6');
}

/** Why an address may not be reached, or undefined when it may. */
function addressRefusal(rules: AllowRules, address: string): string | undefined {
  const kind = refusedKind(address);
  return kind === undefined || allowsAddress(rules, address) ? undefined : kind;
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || (isIP(host) !== 0 && refusedKind(host) === 'a loopback address');
}

/**
 * Why a URL may not be fetched, judged without resolving its name, or undefined when nothing speaks against it
 * yet: a DNS name is judged by the addresses it resolves to when the connection is made.
 */
function urlRefusal(url: URL, rules: AllowRules): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return `only http and https URLs can be reached, not ${url.protocol}`;
  }
  if (url.username || url.password) return 'credentials in the URL are not allowed';
  const host = normalizeHost(url.hostname);
  // Plain http could be read and altered on the way; only a loopback connection never leaves the machine.
  if (url.protocol === 'http:' && !isLoopbackHost(host))
    return `plain http is only allowed to a loopback host; use https`;
  // Only as the target of plain http is `localhost` taken at its word; otherwise, as every name, it is judged by
  // what it resolves to.
  if (url.protocol === 'http:' && host === 'localhost') {
    const allowed =
      rules.all || rules.names.has(host) || allowsAddress(rules, '127.0.0.1') || allowsAddress(rules, '::1');
    return allowed ? undefined : `localhost is a loopback address (${ALLOW_HINT})`;
  }
  if (isIP(host) === 0) return undefined;
  const kind = addressRefusal(rules, host);
  return kind === undefined ? undefined : `${host} is ${kind} (${ALLOW_HINT})`;
}

function toUrl(input: string | URL): URL {
  try {
    return new URL(input);
  } catch {
    throw new OutboundRefusedError('Refused: not a valid URL');
  }
}

/** Synchronous checks of a URL before anything is sent (for validating user input with a 400): scheme http/https only, no credentials in the URL, http only for a loopback host (which must also be allowed), an IP-literal host must not be private unless allowed. Throws OutboundRefusedError with a clear message. */
export function checkOutboundUrl(url: string | URL, policy: OutboundPolicy): URL {
  const parsed = toUrl(url);
  const refusal = urlRefusal(parsed, compileAllowRules(policy.privateHosts));
  if (refusal !== undefined) throw new OutboundRefusedError(`Refused: ${refusal}`);
  return parsed;
}

/**
 * The DNS lookup of the guard's connections. Node's socket connects to the addresses this hands back, and to no
 * other, so the addresses judged here are the ones connected to: a name cannot resolve to a public address for a
 * check and to a private one for the connection (DNS rebinding). Refused addresses are left out; a name is refused
 * when none is left.
 */
function guardedLookup(rules: AllowRules): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, resolved: LookupAddress[]) => {
      if (error) return callback(error, '');
      const host = normalizeHost(hostname);
      let usable = resolved;
      // Plain http is allowed to `localhost` for being loopback: hold the name to that.
      if (host === 'localhost') usable = usable.filter(({ address }) => refusedKind(address) === 'a loopback address');
      if (!rules.all && !rules.names.has(host)) {
        usable = usable.filter(({ address }) => addressRefusal(rules, address) === undefined);
      }
      const [first] = usable;
      if (first === undefined) {
        // The addresses themselves stay out of the message: it would tell a user how internal names resolve.
        const kinds = [...new Set(resolved.map(({ address }) => refusedKind(address) ?? 'a public address'))];
        const what = kinds.length > 0 ? kinds.join(' and ') : 'no address';
        return callback(new OutboundRefusedError(`Refused: ${host} resolves to ${what} (${ALLOW_HINT})`), '');
      }
      if (options.all) return callback(null, usable);
      return callback(null, first.address, first.family);
    });
  };
}

/** The OutboundRefusedError that a connection failure was caused by, when the guard's lookup refused it. */
function refusalIn(error: unknown): OutboundRefusedError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof OutboundRefusedError) return current;
    current = current.cause;
  }
  return undefined;
}

/**
 * The body, passed on chunk by chunk as it arrives (an SSE stream must not wait for its end), erroring once more
 * than `maxBytes` have come. Pull-based, so that the server is read no faster than the caller reads.
 */
function limitBody(source: ReadableStream<Uint8Array>, maxBytes: number, host: string): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let received = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        received += value.byteLength;
        if (received > maxBytes) {
          const error = new OutboundLimitError('size', `Cut off: the response from ${host} exceeds ${maxBytes} bytes`);
          controller.error(error);
          await reader.cancel(error).catch(() => undefined);
          return;
        }
        controller.enqueue(value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

function validatePolicy(policy: OutboundPolicy): number {
  if (!Number.isFinite(policy.timeoutMs) || policy.timeoutMs <= 0) {
    throw new RangeError(`Outbound timeoutMs must be a positive number of milliseconds, not ${policy.timeoutMs}`);
  }
  if (!Number.isSafeInteger(policy.maxResponseBytes) || policy.maxResponseBytes <= 0) {
    throw new RangeError(`Outbound maxResponseBytes must be a positive integer, not ${policy.maxResponseBytes}`);
  }
  const maxRedirects = policy.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  if (!Number.isSafeInteger(maxRedirects) || maxRedirects < 0) {
    throw new RangeError(`Outbound maxRedirects must be a non-negative integer, not ${maxRedirects}`);
  }
  return maxRedirects;
}

/** Methods fetch spells in capitals whatever their case; any other is taken as it is, or refused, by a Request. */
const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
function methodOf(method = 'GET'): string {
  const upper = method.toUpperCase();
  return NORMALIZED_METHODS.has(upper) ? upper : new Request('http://outbound.invalid/', { method }).method;
}

/**
 * The request's method, headers and body as bytes, once: a 307 or 308 sends the same body again. A string body
 * (every MCP message, most OAuth requests) is encoded here, with the Content-Type fetch would give it; any other body
 * (URLSearchParams, FormData, Blob, stream) goes through a Request, which does the same for every kind, at the cost
 * of a stream or two.
 */
async function bytesOf(init: RequestInit): Promise<{ method: string; headers: Headers; body: Uint8Array | undefined }> {
  if (init.body === undefined || init.body === null || typeof init.body === 'string') {
    const method = methodOf(init.method);
    const headers = new Headers(init.headers);
    if (typeof init.body !== 'string') return { method, headers, body: undefined };
    if (method === 'GET' || method === 'HEAD') throw new TypeError(`Request with ${method} method cannot have body.`);
    if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
    return { method, headers, body: new TextEncoder().encode(init.body) };
  }
  const prepared = new Request('http://outbound.invalid/', {
    method: init.method ?? 'GET',
    headers: init.headers,
    body: init.body,
    duplex: 'half',
  });
  const body = prepared.body ? new Uint8Array(await prepared.arrayBuffer()) : undefined;
  return { method: prepared.method, headers: new Headers(prepared.headers), body };
}

let undiciModule: typeof Undici | undefined;
/** undici (CommonJS), loaded on the first outbound request: a service that makes none never needs it. */
const undici = (): typeof Undici => (undiciModule ??= createRequire(import.meta.url)('undici') as typeof Undici);

/** A fetch that applies every rule below to each request and each redirect hop. */
export function createOutboundFetch(policy: OutboundPolicy): OutboundFetch {
  const maxRedirects = validatePolicy(policy);
  const rules = compileAllowRules(policy.privateHosts);
  const { timeoutMs, maxResponseBytes } = policy;
  let dispatcher: Undici.Agent | undefined;
  const connected = () =>
    (dispatcher ??= new (undici().Agent)({
      connect: { lookup: guardedLookup(rules) },
      // The guard's own deadline covers the headers; a stream's body may rightly stay quiet for long, and is
      // bounded by the caller's signal.
      headersTimeout: 0,
      bodyTimeout: 0,
    }));

  return async function outboundFetch(input, init = {}) {
    let url = toUrl(input);
    const refusal = urlRefusal(url, rules);
    if (refusal !== undefined) throw new OutboundRefusedError(`Refused: ${refusal}`);
    const callerSignal = init.signal ?? undefined;
    callerSignal?.throwIfAborted();

    const prepared = await bytesOf(init);
    let method = prepared.method;
    const headers = prepared.headers;
    let body = prepared.body;

    let host = url.host;
    const deadline = new AbortController();
    const timer = setTimeout(
      () =>
        deadline.abort(new OutboundLimitError('timeout', `Timed out: no response from ${host} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    // The caller's signal keeps governing the body after the deadline is cleared.
    const signal = callerSignal ? AbortSignal.any([callerSignal, deadline.signal]) : deadline.signal;

    try {
      for (let hop = 0; ; hop++) {
        let response;
        try {
          response = await undici().fetch(url, {
            method,
            headers: [...headers],
            body,
            redirect: 'manual',
            signal,
            dispatcher: connected(),
          });
        } catch (error) {
          throw refusalIn(error) ?? error;
        }

        const location = REDIRECT_STATUSES.has(response.status) ? response.headers.get('location') : null;
        if (location === null || init.redirect === 'manual') {
          const source = response.body as ReadableStream<Uint8Array> | null;
          const nullBody = NULL_BODY_STATUSES.has(response.status) || source === null || method === 'HEAD';
          if (nullBody) await source?.cancel().catch(() => undefined);
          // Refused before a byte of the body is read; a body without Content-Length is counted as it comes.
          if (!nullBody && Number(response.headers.get('content-length') ?? 0) > maxResponseBytes) {
            await source.cancel().catch(() => undefined);
            throw new OutboundLimitError(
              'size',
              `Cut off: the response from ${host} exceeds ${maxResponseBytes} bytes`,
            );
          }
          // A declared length within the limit bounds the body already (the connection reads no further), unless
          // the body is compressed: fetch inflates it, to any size.
          const bounded = response.headers.has('content-length') && !response.headers.has('content-encoding');
          const result = new Response(nullBody ? null : bounded ? source : limitBody(source, maxResponseBytes, host), {
            status: response.status,
            statusText: response.statusText,
            headers: [...response.headers],
          });
          // A constructed Response has no URL; callers (OAuth discovery) resolve relative links against it.
          Object.defineProperties(result, { url: { value: url.href }, redirected: { value: hop > 0 } });
          return result;
        }

        await response.body?.cancel().catch(() => undefined);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new OutboundRefusedError(`Refused: ${host} redirected to an invalid URL`);
        }
        const where = next.protocol === 'http:' || next.protocol === 'https:' ? next.origin : next.protocol;
        if (init.redirect === 'error') {
          throw new OutboundRefusedError(`Refused redirect to ${where}: this request does not follow redirects`);
        }
        if (hop >= maxRedirects) throw new OutboundRefusedError(`Refused: more than ${maxRedirects} redirects`);
        const hopRefusal = urlRefusal(next, rules);
        if (hopRefusal !== undefined) throw new OutboundRefusedError(`Refused redirect to ${where}: ${hopRefusal}`);

        // As fetch does (RFC 9110 §15.4): 303 always, and 301/302 by long custom, turn a request with a body into
        // a GET; 307 and 308 exist to keep method and body.
        if (response.status <= 303 && method !== 'GET' && method !== 'HEAD') {
          method = 'GET';
          body = undefined;
          for (const name of BODY_HEADERS) headers.delete(name);
        }
        if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
        url = next;
        host = url.host;
      }
    } finally {
      clearTimeout(timer);
    }
  };
}
