import type OpenAI from 'openai';
import type { Config } from '../../config.js';
import type { CheckResult, HealthCheck } from '../../ports/health.js';
import { loadOpenAiSdk } from './openai-sdk.js';

const NAME = 'llm_provider';
const TIMEOUT_MS = 5_000;

type OpenAiConfig = Extract<Config['llm'], { provider: 'openai' }>;

/** The offline model runs in-process. It is named in every report so nobody mistakes it for a real model. */
export function offlineLlmHealthCheck(): HealthCheck {
  return {
    name: NAME,
    critical: false,
    timeoutMs: TIMEOUT_MS,
    embedded: true,
    details: { provider: 'offline', model: 'offline' },
    run: () => Promise.resolve({ status: 'healthy' }),
  };
}

/**
 * An OpenAI-compatible endpoint: the key is accepted, the configured model is listed, and the answer comes
 * within 5 s. Rate limiting or exhausted quota leaves the service degraded rather than down.
 */
export function openAiLlmHealthCheck(config: OpenAiConfig): HealthCheck {
  let client: OpenAI | undefined;
  return {
    name: NAME,
    critical: false,
    timeoutMs: TIMEOUT_MS,
    details: { provider: 'openai', model: config.model, url: config.baseUrl },
    run: async (signal): Promise<CheckResult> => {
      const sdk = await loadOpenAiSdk();
      client ??= new sdk({
        apiKey: config.apiKey ?? 'unset',
        baseURL: config.baseUrl,
        maxRetries: 0,
        timeout: TIMEOUT_MS,
      });
      try {
        const models = await client.models.list({ signal });
        const ids = models.data.map((m) => m.id);
        if (!ids.includes(config.model)) {
          return { status: 'unhealthy', message: `model ${config.model} is not available` };
        }
        return { status: 'healthy' };
      } catch (error) {
        if (error instanceof sdk.AuthenticationError || error instanceof sdk.PermissionDeniedError) {
          return { status: 'unhealthy', message: 'API key rejected' };
        }
        if (error instanceof sdk.RateLimitError) {
          return { status: 'degraded', message: 'rate limited or over quota' };
        }
        if (error instanceof sdk.APIConnectionError) {
          return { status: 'unhealthy', message: 'endpoint unreachable' };
        }
        throw error;
      }
    },
  };
}
