import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';

/** A document larger than this is refused (the drafts suggest 5 KB). */
const MAX_BYTES = 5 * 1024;
const TIMEOUT_MS = 5_000;
/** How long a fetched document is used before it is fetched again (its Cache-Control may shorten, not lengthen). */
const MAX_AGE_MS = 10 * 60_000;
const CACHE_LIMIT = 1_000;

export interface ClientMetadataOptions {
  /**
   * Hosts whose documents may be fetched although they resolve to a loopback or private address (an intranet
   * client). Everything else must resolve to public addresses: the fetch must not be a way into the network.
   */
  privateHosts: string[];
  now: () => number;
  /** The application type the document's redirect URIs allow (the same rules as dynamic registration). */
  applicationType: (declared: unknown, redirectUris: string[]) => 'web' | 'native' | { problem: string };
}

/** Whether a client id is a Client ID Metadata Document URL: https, a path, no fragment, no credentials. */
export function isMetadataDocumentUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://') || !URL.canParse(clientId)) return false;
  const url = new URL(clientId);
  return url.pathname !== '/' && !url.hash && !url.username && !url.password;
}

/** Addresses a metadata document must not be fetched from: loopback, private, link-local, shared and multicast. */
const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 3],
] as const)
  PRIVATE.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 127],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(network, prefix, 'ipv6');

function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return PRIVATE.check(mapped, 'ipv4');
  return PRIVATE.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Client ID Metadata Documents: a client whose id is an https URL publishes its metadata there, instead of
 * registering. Documents are fetched with a timeout and a size limit, only from hosts that resolve to public
 * addresses (unless named in `privateHosts`), without following redirects, and kept for a while.
 */
export class ClientMetadataDocuments {
  readonly #cache = new Map<string, { at: number; maxAgeMs: number; client: OAuthClientInformationFull | undefined }>();

  constructor(private readonly options: ClientMetadataOptions) {}

  /** The client the document at `url` describes, or undefined when it cannot be fetched or is not valid. */
  async resolve(url: string): Promise<OAuthClientInformationFull | undefined> {
    if (!isMetadataDocumentUrl(url)) return undefined;
    const now = this.options.now();
    const cached = this.#cache.get(url);
    if (cached && now - cached.at < cached.maxAgeMs) return cached.client;
    const fetched = await this.#fetch(url).catch(() => ({ client: undefined, maxAgeMs: 60_000 }));
    this.#cache.delete(url);
    this.#cache.set(url, { at: now, ...fetched });
    if (this.#cache.size > CACHE_LIMIT) this.#cache.delete(this.#cache.keys().next().value!);
    return fetched.client;
  }

  async #fetch(url: string): Promise<{ client: OAuthClientInformationFull | undefined; maxAgeMs: number }> {
    const { hostname } = new URL(url);
    const host = hostname.replace(/^\[|\]$/g, '');
    if (!this.options.privateHosts.includes(host)) {
      const addresses = isIP(host) ? [{ address: host }] : await lookup(host, { all: true });
      if (addresses.length === 0 || addresses.some(({ address }) => isPrivateAddress(address)))
        return { client: undefined, maxAgeMs: 60_000 };
    }
    const res = await fetch(url, {
      redirect: 'error',
      headers: { Accept: 'application/json' },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (!res.ok || declared > MAX_BYTES) return { client: undefined, maxAgeMs: 60_000 };
    const text = await readAtMost(res, MAX_BYTES);
    const maxAgeMs = Math.min(MAX_AGE_MS, maxAgeOf(res.headers.get('cache-control')) ?? MAX_AGE_MS);
    if (text === undefined) return { client: undefined, maxAgeMs };
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      return { client: undefined, maxAgeMs };
    }
    return { client: this.#validate(url, document), maxAgeMs };
  }

  /** The document's metadata as a public client, or undefined when it breaks a rule. */
  #validate(url: string, document: unknown): OAuthClientInformationFull | undefined {
    if (typeof document !== 'object' || document === null) return undefined;
    const raw = document as Record<string, unknown>;
    // The document names itself; a secret has no place in a public document.
    if (raw.client_id !== url || 'client_secret' in raw || 'client_secret_expires_at' in raw) return undefined;
    const parsed = OAuthClientMetadataSchema.safeParse(document);
    if (!parsed.success) return undefined;
    const metadata = parsed.data;
    const method = metadata.token_endpoint_auth_method ?? 'none';
    if (method !== 'none') return undefined;
    if (metadata.redirect_uris.length === 0) return undefined;
    const applicationType = this.options.applicationType(raw.application_type, metadata.redirect_uris);
    if (typeof applicationType === 'object') return undefined;
    const client = {
      ...metadata,
      application_type: applicationType,
      client_id: url,
      client_name: (metadata.client_name ?? new URL(url).host).slice(0, 200),
      token_endpoint_auth_method: 'none',
    };
    return client;
  }
}

function maxAgeOf(cacheControl: string | null): number | undefined {
  const match = /(?:^|,)\s*max-age=(\d+)/i.exec(cacheControl ?? '');
  if (/no-store|no-cache/i.test(cacheControl ?? '')) return 0;
  return match ? Number(match[1]) * 1000 : undefined;
}

/** The body as text, or undefined when it is longer than `limit` bytes. */
async function readAtMost(res: Response, limit: number): Promise<string | undefined> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
