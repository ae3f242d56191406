import { z } from 'zod';
import { defineTool, textResult } from '../src/mcp/tools.js';
import { messageResponseShape } from './message-response.js';

/**
 * One turn with the model in a conversation: the service's basic chat. The model is offered the tools the caller
 * may use, unless `use_tools` is false.
 */
export const chat = defineTool({
  name: 'chat',
  title: 'Chat',
  description:
    'Send a message to the assistant and get its answer; it may use the tools you are allowed to use ' +
    '(use_tools: false for none). Pass conversation_id to continue a conversation.',
  inputSchema: {
    query: z.string().min(1).max(32_000).describe('Your message'),
    conversation_id: z.string().max(64).optional().describe('Continue this conversation (from an earlier answer)'),
    use_tools: z
      .boolean()
      .default(true)
      .describe('Let the assistant use the tools you may use (false: the model alone)'),
  },
  outputSchema: messageResponseShape,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  forAgent: false,
  handler: async ({ query, conversation_id, use_tools }, context) => {
    const response = await context.chat.complete(
      {
        caller: context.caller,
        query,
        useTools: use_tools,
        ...(conversation_id && { conversationId: conversation_id }),
      },
      context.signal,
    );
    return textResult(response.response, { ...response });
  },
});
