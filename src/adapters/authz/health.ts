import { openFgaClient } from './openfga-client.js';
import { openFgaSdk } from './openfga-sdk.js';
import type { Config } from '../../config.js';
import type { Db } from '../../db/create-db.js';
import type { CheckResult, HealthCheck } from '../../ports/health.js';

const NAME = 'authz_service';
const TIMEOUT_MS = 1_000;

type OpenFgaConfig = Extract<Config['authz'], { provider: 'openfga' }>;

/** The embedded evaluator keeps its tuples in the service's database: it is available when the database is. */
export function embeddedAuthzHealthCheck(db: Db): HealthCheck {
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    embedded: true,
    details: { provider: 'embedded', url: null, store_id: null },
    run: async () => {
      await db.ping();
      return { status: 'healthy' };
    },
  };
}

/** OpenFGA: reachable, the store exists, and the configured (or latest) authorization model loads. */
export function openFgaHealthCheck(config: OpenFgaConfig): HealthCheck {
  const client = openFgaClient(config, { maxRetry: 0, timeoutMs: TIMEOUT_MS });
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    details: { provider: 'openfga', url: config.apiUrl, store_id: config.storeId, model_id: config.modelId ?? null },
    run: async (): Promise<CheckResult> => {
      try {
        const store = await client.getStore();
        const model = config.modelId
          ? await client.readAuthorizationModel()
          : await client.readLatestAuthorizationModel();
        if (!model.authorization_model) {
          return { status: 'unhealthy', message: `store ${config.storeId} has no authorization model` };
        }
        return {
          status: 'healthy',
          details: { store_name: store.name, model_id: model.authorization_model.id },
        };
      } catch (error) {
        const { FgaApiAuthenticationError, FgaApiNotFoundError, FgaApiValidationError } = openFgaSdk();
        // OpenFGA answers a missing store with 404, but a missing model with 400 authorization_model_not_found.
        if (
          error instanceof FgaApiNotFoundError ||
          (error instanceof FgaApiValidationError && String(error.apiErrorCode) === 'authorization_model_not_found')
        ) {
          return { status: 'unhealthy', message: 'store or authorization model not found' };
        }
        if (error instanceof FgaApiAuthenticationError) {
          return { status: 'unhealthy', message: 'credentials rejected' };
        }
        throw error;
      }
    },
  };
}
