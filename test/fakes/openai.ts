import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * A FAKE of a hosted OpenAI-compatible API (no such service can run here). It speaks the real wire format of
 * the endpoints the service uses; tests choose how it behaves.
 */
export interface FakeOpenAi {
  url: string;
  /** What GET /v1/models does next: list these ids, or fail with this status. */
  models: string[];
  failWith: number | undefined;
  requests: { method: string; path: string; authorization: string | undefined }[];
  close: () => Promise<void>;
}

const ERROR_TYPES: Record<number, { type: string; code: string; message: string }> = {
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  429: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'You exceeded your current quota.' },
  500: { type: 'server_error', code: 'server_error', message: 'The server had an error.' },
};

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startFakeOpenAi(models: string[] = ['gpt-4o-mini']): Promise<FakeOpenAi> {
  const fake: Omit<FakeOpenAi, 'url' | 'close'> = { models, failWith: undefined, requests: [] };
  const served = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    fake.requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization });
    if (fake.failWith) {
      const error = ERROR_TYPES[fake.failWith] ?? ERROR_TYPES[500]!;
      send(res, fake.failWith, { error: { ...error, param: null } });
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      send(res, 200, {
        object: 'list',
        data: fake.models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake' })),
      });
      return;
    }
    send(res, 404, {
      error: { type: 'invalid_request_error', code: 'unknown_url', message: `Unknown ${path}`, param: null },
    });
  });
  return Object.assign(fake, { url: `${served.url}/v1`, close: served.close });
}
