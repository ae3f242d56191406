/**
 * The answer an upstream's sign-in brings back: the service redirects the browser to the address the page gave as
 * `return_to`, with `?connection=<id>&connected=1` (or `&error=<code>`) added. Both the connections page and the
 * playground's chat (which sends people to sign in from a tool call) read it.
 */
export interface SignInReturn {
  id: string;
  connected: boolean;
  error: string | null;
}

const RETURN_PARAMS = ['connection', 'connected', 'error', 'error_description'];

/** The service adds its answer to the query; a return address with a fragment may carry it there instead. */
export function readSignInReturn(): SignInReturn | null {
  const fromHash = window.location.hash.includes('?')
    ? window.location.hash.slice(window.location.hash.indexOf('?'))
    : '';
  for (const search of [window.location.search, fromHash]) {
    const params = new URLSearchParams(search);
    const id = params.get('connection');
    if (id) return { id, connected: params.get('connected') === '1', error: params.get('error') };
  }
  return null;
}

/** Takes the sign-in's answer out of the address, so a reload does not announce it again. */
export function clearSignInReturn(): void {
  const strip = (search: string) => {
    const params = new URLSearchParams(search);
    for (const name of RETURN_PARAMS) params.delete(name);
    const rest = params.toString();
    return rest ? `?${rest}` : '';
  };
  const { pathname, search, hash } = window.location;
  const cut = hash.indexOf('?');
  const cleanHash = cut >= 0 ? `${hash.slice(0, cut)}${strip(hash.slice(cut))}` : hash;
  const next = `${pathname}${strip(search)}${cleanHash}`;
  if (next !== `${pathname}${search}${hash}`) window.history.replaceState(window.history.state, '', next);
}

/** How the page says an error code the service passed on (`access_denied`: "access denied"). */
export const humanizeCode = (code: string) => code.replaceAll('_', ' ');
