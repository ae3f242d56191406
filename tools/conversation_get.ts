import { z } from 'zod';
import { defineTool, textResult } from '../src/mcp/tools.js';

/** A conversation the caller may see, with its messages. */
export const conversationGet = defineTool({
  name: 'conversation_get',
  title: 'Get a conversation',
  description: 'Read one of your conversations with all its messages.',
  inputSchema: {
    conversation_id: z.string().min(1).max(64).describe('The conversation to read'),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  forAgent: true,
  handler: async ({ conversation_id }, context) => {
    const conversation = await context.conversations.access(context.subject, conversation_id);
    const messages = await context.conversations.messages(conversation.id);
    const body = {
      conversation_id: conversation.id,
      title: conversation.title,
      created_at: conversation.createdAt,
      updated_at: conversation.updatedAt,
      message_count: conversation.messageCount,
      usage: {
        prompt_tokens: conversation.usage.promptTokens,
        completion_tokens: conversation.usage.completionTokens,
        total_tokens: conversation.usage.totalTokens,
      },
      messages: messages.map((m) => ({
        id: m.id,
        role: m.role,
        content: m.content,
        timestamp: m.createdAt,
        ...(m.toolCalls && { tool_calls: m.toolCalls }),
        ...(m.name && { name: m.name }),
      })),
    };
    return textResult(JSON.stringify(body, null, 2), body);
  },
});
