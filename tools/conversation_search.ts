import { z } from 'zod';
import { defineTool, textResult } from '../src/mcp/tools.js';

/** Searches the caller's own conversations. */
export const conversationSearch = defineTool({
  name: 'conversation_search',
  title: 'Search your conversations',
  description: 'Find messages in your own conversations that contain every word of the query, best match first.',
  inputSchema: {
    query: z.string().min(1).max(500).describe('Words to look for'),
    limit: z.number().int().min(1).max(50).default(10).describe('How many matches at most'),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  forAgent: true,
  handler: async ({ query, limit }, context) => {
    const hits = await context.conversations.search(context.subject, query, limit);
    const matches = hits.map((h) => ({
      conversation_id: h.conversationId,
      title: h.title,
      message_id: h.messageId,
      role: h.role,
      snippet: h.snippet,
      timestamp: h.createdAt,
    }));
    const text =
      matches.length === 0
        ? `No messages match "${query}".`
        : matches.map((m) => `[${m.conversation_id}] ${m.title} (${m.role}, ${m.timestamp}): ${m.snippet}`).join('\n');
    return textResult(text, { matches });
  },
});
