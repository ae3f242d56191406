import { z } from 'zod';

/** The spec's Message response, the structured result of the tools that run the agent. */
export const messageResponseShape = {
  response: z.string().describe('The answer'),
  conversation_id: z.string().describe('Pass it back to continue the conversation'),
  model: z.string().describe('The model that answered'),
  usage: z.object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
  }),
};
