import type { Approval, AuthKind, ConnectionScope, Transport } from './connections-api';

/** How the page names the service's enumerations. */
export const TRANSPORT_LABELS: Record<Transport, string> = {
  streamable_http: 'Streamable HTTP',
  sse: 'HTTP + SSE',
  stdio: 'stdio',
};

export const AUTH_LABELS: Record<AuthKind, string> = {
  none: 'None',
  bearer: 'Bearer token',
  header: 'API key in a header',
  oauth: 'OAuth (each person signs in)',
};

export const SCOPE_LABELS: Record<ConnectionScope, string> = {
  personal: 'Personal',
  shared: 'Shared',
};

export const APPROVAL_LABELS: Record<Approval, string> = {
  destructive: 'Destructive tools',
  writes: 'Every tool that is not read-only',
  never: 'Never',
};
