import type { RequestHandler } from 'express';
import { CommonErrorCode, ForbiddenError } from '../errors.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
/** Host headers whose answer is kept; beyond it the list starts afresh (a client may send any Host it likes). */
const KNOWN_HOSTS_LIMIT = 64;

function hostnameOf(value: string): string | undefined {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

export interface HostPolicy {
  /** Whether a request's Host header names this service. */
  hostAllowed(host: string | undefined): boolean;
  /** Whether a browser Origin may talk to this service (absent: not a browser, allowed). */
  originAllowed(origin: string | undefined): boolean;
}

/**
 * Protection against DNS rebinding while the service listens on loopback only: a web page whose hostname was
 * re-pointed at 127.0.0.1 still sends its own name in Host and Origin, so only loopback names and the configured
 * public URL's host are accepted. When the service listens on other interfaces it is behind whatever fronts it,
 * and nothing is checked here.
 */
export function hostPolicy(listenHost: string, publicUrl: string): HostPolicy | undefined {
  if (!LOOPBACK_HOSTS.has(listenHost.toLowerCase())) return undefined;
  const allowed = new Set(LOOPBACK_HOSTS);
  const publicHost = hostnameOf(publicUrl);
  if (publicHost) allowed.add(publicHost);
  const ok = (name: string | undefined) => name !== undefined && allowed.has(name);
  // Every request names a Host, nearly always one of a few: each is parsed as a URL once, not once per request.
  const hosts = new Map<string, boolean>();
  return {
    hostAllowed: (host) => {
      if (host === undefined) return true;
      let answer = hosts.get(host);
      if (answer === undefined) {
        answer = ok(hostnameOf(host));
        if (hosts.size >= KNOWN_HOSTS_LIMIT) hosts.clear();
        hosts.set(host, answer);
      }
      return answer;
    },
    originAllowed: (origin) =>
      origin === undefined || origin === 'null' ? origin === undefined : ok(hostnameOf(origin)),
  };
}

export function hostValidation(policy: HostPolicy): RequestHandler {
  return (req, _res, next) => {
    if (!policy.hostAllowed(req.headers.host)) {
      next(new ForbiddenError('Host not allowed', { code: CommonErrorCode.Forbidden }));
      return;
    }
    if (!policy.originAllowed(req.headers.origin)) {
      next(new ForbiddenError('Origin not allowed', { code: CommonErrorCode.Forbidden }));
      return;
    }
    next();
  };
}
