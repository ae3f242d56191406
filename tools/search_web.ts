import { z } from 'zod';
import { defineTool, textResult } from '../src/mcp/tools.js';

/** Web search (SearXNG when configured; otherwise the service's documentation and the caller's conversations). */
export const searchWeb = defineTool({
  name: 'search_web',
  title: 'Search the web',
  description: 'Search for information. Returns titles, links and snippets.',
  inputSchema: {
    query: z.string().min(1).max(500).describe('What to search for'),
    max_results: z.number().int().min(1).max(20).default(5).describe('How many results at most'),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  forAgent: true,
  handler: async ({ query, max_results }, context) => {
    const results = await context.search.search(query, {
      limit: max_results,
      subject: context.subject,
      signal: context.signal,
    });
    await context.log('debug', { tool: 'search_web', results: results.length });
    if (results.length === 0) return textResult(`No results for "${query}".`, { results: [] });
    const text = results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}\n   ${r.snippet}`).join('\n');
    return textResult(text, { results: results.map((r) => ({ ...r })) });
  },
});
