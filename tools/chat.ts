import { z } from 'zod';
import { runToCompletion } from '../src/modules/agent/agent.port.js';
import { defineTool, textResult } from '../src/mcp/tools.js';
import { messageResponseShape } from './message-response.js';

/** One turn with the model in a conversation (no tools): the service's basic chat. */
export const chat = defineTool({
  name: 'chat',
  title: 'Chat',
  description: 'Send a message to the assistant and get its answer. Pass conversation_id to continue a conversation.',
  inputSchema: {
    query: z.string().min(1).max(32_000).describe('Your message'),
    conversation_id: z.string().max(64).optional().describe('Continue this conversation (from an earlier answer)'),
  },
  outputSchema: messageResponseShape,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  forAgent: false,
  handler: async ({ query, conversation_id }, context) => {
    const response = await runToCompletion(context.agent(), {
      caller: context.caller,
      message: query,
      mode: 'chat',
      signal: context.signal,
      ...(conversation_id && { conversationId: conversation_id }),
    });
    return textResult(response.response, { ...response });
  },
});
