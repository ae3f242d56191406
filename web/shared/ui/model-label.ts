/** Which model answers, as a web UI's open settings say it. */
export interface ModelSettings {
  /** `offline` (the built-in stand-in, when no LLM is configured) or `openai` (any OpenAI-compatible API). */
  llm_provider?: string;
  model: string;
}

/** Whether the built-in offline stand-in answers: no LLM is configured. */
export function isOfflineModel(settings: ModelSettings): boolean {
  return settings.llm_provider === 'offline';
}

/**
 * The model's name for a badge or a subtitle. The stand-in's own name is "offline", which beside a connection
 * status reads as if the service were down; it is called the offline model instead.
 */
export function modelLabel(settings: ModelSettings): string {
  return isOfflineModel(settings) ? 'offline model' : settings.model;
}

/** Where the model is reached, for a tooltip. */
export function modelSource(settings: ModelSettings): string {
  if (isOfflineModel(settings)) return 'No LLM is configured: the offline model answers';
  if (settings.llm_provider === 'openai') return 'Reached through an OpenAI-compatible API';
  return settings.llm_provider ? `Provider: ${settings.llm_provider}` : 'The configured model';
}
