import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * A FAKE of a SearXNG instance (none can run here): a loopback HTTP server answering `GET <base>/search?q=…&format=json`
 * with SearXNG's JSON shape — `{ query, number_of_results, results: [{ url, title, content, engine, engines,
 * score, category, … }], answers, corrections, infoboxes, suggestions, unresponsive_engines }`. Like a real
 * instance without `json` in `search.formats`, it answers any other format with a 403.
 *
 * Tests choose the results, a status to fail with, and read back every request it received.
 */
export interface FakeSearxng {
  /** The base URL to configure as SEARCH_URL (with the `basePath` given at start). */
  url: string;
  /** What the next searches return (SearXNG's result objects; any fields may be left out or malformed). */
  results: Record<string, unknown>[];
  /** Every request fails with this status while it is set. */
  failWith: number | undefined;
  /**
   * When set, searches answer 200 with this body as it is instead of JSON (a proxy's login or error page in front
   * of the instance).
   */
  rawBody: string | undefined;
  requests: { method: string; path: string; query: Record<string, string>; accept: string | undefined }[];
  close: () => Promise<void>;
}

/** A typical SearXNG result, with the fields a real instance sends. */
export function searxngResult(n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: `https://example.org/page-${n}`,
    title: `Result ${n}`,
    content: `Snippet of result ${n}.`,
    engine: n % 2 === 0 ? 'duckduckgo' : 'wikipedia',
    engines: [n % 2 === 0 ? 'duckduckgo' : 'wikipedia'],
    parsed_url: ['https', 'example.org', `/page-${n}`, '', '', ''],
    template: 'default.html',
    positions: [n],
    score: 1 / n,
    category: 'general',
    publishedDate: null,
    ...extra,
  };
}

/** Starts the fake on an ephemeral loopback port, serving under `basePath` (say `/searx`; default the root). */
export async function startFakeSearxng(basePath = ''): Promise<FakeSearxng> {
  const fake: Omit<FakeSearxng, 'url' | 'close'> = {
    results: [],
    failWith: undefined,
    rawBody: undefined,
    requests: [],
  };

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    fake.requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      accept: req.headers.accept,
    });
    const send = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, { 'Content-Type': type });
      res.end(body);
    };
    if (fake.failWith) {
      send(fake.failWith, '<html><body>Internal Server Error</body></html>', 'text/html');
      return;
    }
    if (req.method !== 'GET' || url.pathname !== `${basePath}/search`) {
      send(404, '<html><body>Not Found</body></html>', 'text/html');
      return;
    }
    if (url.searchParams.get('format') !== 'json') {
      send(403, '<html><body>Forbidden</body></html>', 'text/html');
      return;
    }
    if (fake.rawBody !== undefined) {
      send(200, fake.rawBody, 'text/html');
      return;
    }
    const query = url.searchParams.get('q') ?? '';
    send(
      200,
      JSON.stringify({
        query,
        number_of_results: fake.results.length,
        results: fake.results,
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: [],
        unresponsive_engines: [],
      }),
    );
  }

  const served = await serveOnLoopback(handle);
  return Object.assign(fake, { url: `${served.url}${basePath}`, close: served.close });
}
