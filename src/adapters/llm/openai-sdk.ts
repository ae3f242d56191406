import type OpenAI from 'openai';

/**
 * The official `openai` client library, loaded the first time an OpenAI-compatible provider is called (about 5 MB
 * of memory a service on the offline model never needs).
 */
export type OpenAiSdk = typeof OpenAI;

let loading: Promise<OpenAiSdk> | undefined;
let loaded: OpenAiSdk | undefined;

export function loadOpenAiSdk(): Promise<OpenAiSdk> {
  loading ??= import('openai').then(({ default: sdk }) => (loaded = sdk));
  return loading;
}

/** The library once it is loaded: none of its errors can exist before. */
export function loadedOpenAiSdk(): OpenAiSdk | undefined {
  return loaded;
}
