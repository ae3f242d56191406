import { z } from 'zod';
import { defineTool, textResult } from '../src/mcp/tools.js';
import { messageResponseShape } from './message-response.js';

/** A turn with the agent: the model may call the tools the caller is allowed to use before it answers. */
export const agentChat = defineTool({
  name: 'agent_chat',
  title: 'Agent chat',
  description:
    'Ask the agent: it may search and look through your conversations with its tools before answering. ' +
    'Pass conversation_id to continue a conversation.',
  inputSchema: {
    message: z.string().min(1).max(32_000).describe('Your request'),
    conversation_id: z.string().max(64).optional().describe('Continue this conversation (from an earlier answer)'),
    max_steps: z.number().int().min(1).max(20).default(6).describe('At most this many tool rounds before answering'),
  },
  outputSchema: messageResponseShape,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  forAgent: false,
  longRunning: true,
  handler: async ({ message, conversation_id, max_steps }, context) => {
    const response = await context.chat.complete(
      {
        caller: context.caller,
        query: message,
        useTools: true,
        maxSteps: max_steps,
        ...(conversation_id && { conversationId: conversation_id }),
      },
      context.signal,
    );
    return textResult(response.response, { ...response });
  },
});
