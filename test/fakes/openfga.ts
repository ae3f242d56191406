import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * A FAKE OpenFGA server (no OpenFGA server can run here): the HTTP API paths and JSON bodies of the real one,
 * for the calls the service makes. Store and model ids are ULIDs, as OpenFGA's are.
 */
export interface FakeOpenFga {
  url: string;
  storeId: string;
  modelId: string;
  /** When false, the store answers 404 store_id_not_found. */
  storeExists: boolean;
  close: () => Promise<void>;
}

export const FAKE_STORE_ID = '01HZX5Q3J8Y9N4W7T2V6R0M1KA';
export const FAKE_MODEL_ID = '01HZX5Q3J8Y9N4W7T2V6R0M1KB';

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startFakeOpenFga(): Promise<FakeOpenFga> {
  const state = { storeId: FAKE_STORE_ID, modelId: FAKE_MODEL_ID, storeExists: true };
  const model = {
    id: FAKE_MODEL_ID,
    schema_version: '1.1',
    type_definitions: [{ type: 'user', relations: {} }],
    conditions: {},
  };
  const served = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const storeMatch = /^\/stores\/([^/]+)(\/.*)?$/.exec(path);
    if (!storeMatch || storeMatch[1] !== state.storeId || !state.storeExists) {
      send(res, 404, { code: 'store_id_not_found', message: 'store_id not found' });
      return;
    }
    const rest = storeMatch[2] ?? '';
    const now = '2026-01-01T00:00:00Z';
    if (rest === '') {
      send(res, 200, { id: state.storeId, name: 'agent-service', created_at: now, updated_at: now });
    } else if (rest === '/authorization-models') {
      send(res, 200, { authorization_models: [model], continuation_token: '' });
    } else if (rest === `/authorization-models/${state.modelId}`) {
      send(res, 200, { authorization_model: model });
    } else {
      send(res, 404, { code: 'authorization_model_not_found', message: 'authorization model not found' });
    }
  });
  return Object.assign(state, { url: served.url, close: served.close });
}
