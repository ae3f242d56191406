import type { OpenFgaClient } from '@openfga/sdk';
import { openFgaSdk } from './openfga-sdk.js';

export interface OpenFgaConnection {
  apiUrl: string;
  storeId: string;
  modelId?: string;
  apiToken?: string;
}

/** An SDK client for the configured store; decisions retry a little, health checks not at all. */
export function openFgaClient(
  config: OpenFgaConnection,
  options: { maxRetry: number; minWaitInMs?: number; timeoutMs: number },
): OpenFgaClient {
  const { CredentialsMethod, OpenFgaClient } = openFgaSdk();
  return new OpenFgaClient({
    apiUrl: config.apiUrl,
    storeId: config.storeId,
    ...(config.modelId && { authorizationModelId: config.modelId }),
    ...(config.apiToken && { credentials: { method: CredentialsMethod.ApiToken, config: { token: config.apiToken } } }),
    retryParams: {
      maxRetry: options.maxRetry,
      ...(options.minWaitInMs !== undefined && { minWaitInMs: options.minWaitInMs }),
    },
    baseOptions: { timeout: options.timeoutMs },
  });
}
