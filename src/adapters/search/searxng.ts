import { CommonErrorCode, ServiceUnavailableError } from '../../errors.js';
import type { SearchResult, WebSearch } from './port.js';

interface SearxngResponse {
  results?: { title?: unknown; url?: unknown; content?: unknown; engine?: unknown }[];
}

const TIMEOUT_MS = 10_000;

/** A SearXNG instance's JSON API (`/search?format=json`; the instance must allow the json format). */
export function createSearxngSearch(baseUrl: string): WebSearch {
  const endpoint = new URL('search', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  return {
    provider: 'searxng',
    async search(query, { limit, signal }) {
      const url = new URL(endpoint);
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      const timeout = AbortSignal.timeout(TIMEOUT_MS);
      let response: Response;
      try {
        response = await fetch(url, {
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
          headers: { Accept: 'application/json' },
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new ServiceUnavailableError('The search service did not answer', {
          code: CommonErrorCode.ServiceUnavailable,
          cause: error,
        });
      }
      if (!response.ok) {
        throw new ServiceUnavailableError(`The search service answered ${response.status}`, {
          code: CommonErrorCode.ServiceUnavailable,
        });
      }
      // A proxy's sign-in page or a half-configured instance answers 200 with something else: that is the search
      // service failing, not an internal error of ours.
      let body: SearxngResponse | undefined;
      try {
        body = (await response.json()) as SearxngResponse;
      } catch (error) {
        if (signal?.aborted) throw error;
      }
      if (!Array.isArray(body?.results)) {
        throw new ServiceUnavailableError('The search service answered something other than SearXNG JSON', {
          code: CommonErrorCode.ServiceUnavailable,
        });
      }
      const results: SearchResult[] = [];
      for (const item of body.results) {
        if (typeof item.url !== 'string' || typeof item.title !== 'string') continue;
        results.push({
          title: item.title,
          url: item.url,
          snippet: typeof item.content === 'string' ? item.content : '',
          source: typeof item.engine === 'string' ? item.engine : 'web',
        });
        if (results.length >= limit) break;
      }
      return results;
    },
  };
}
