import type { HealthCheck } from '../../ports/health.js';

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
  /** Where the result came from: the web engine, the service's documentation, or a conversation. */
  source: string;
}

/** What the embedded search needs of the caller's conversations: ranked hits among those `owner` may read. */
export interface ConversationSearcher {
  search(
    owner: string,
    query: string,
    limit: number,
  ): Promise<{ conversationId: string; title: string; snippet: string }[]>;
}

/**
 * Web search for the `search_web` tool. Implementations: a SearXNG JSON API (`SEARCH_URL`), and an embedded
 * default that searches the service's own documentation and the caller's conversations, so the tool does
 * something real offline.
 */
export interface WebSearch {
  readonly provider: 'embedded' | 'searxng';
  /** `subject` is the caller's authorization subject: embedded search looks only in its conversations. */
  search(query: string, options: { limit: number; subject: string; signal?: AbortSignal }): Promise<SearchResult[]>;
  healthCheck?(): HealthCheck;
}
