import type { ToolNeeds } from '../../ports/connected-tools.js';
import type { Context } from '@opentelemetry/api';
import type { Usage } from '../../adapters/llm/port.js';
import { CommonErrorCode, InternalError } from '../../errors.js';
import type { Caller } from '../../ports/caller.js';

/** One turn of a conversation with the agent. */
export interface AgentTurn {
  caller: Caller;
  message: string;
  /** Continue this conversation; a new one is started when absent. */
  conversationId?: string;
  /** `chat` answers with the model alone; `agent` lets the model call the tools the caller may use. */
  mode: 'chat' | 'agent';
  /** Upper bound on model ↔ tool round trips in agent mode. */
  maxSteps?: number;
  signal?: AbortSignal;
  /** The turn's span context: the model and tool spans of the turn are its children. */
  traceContext?: Context;
}

/** What a turn emits as it runs, ending with `done` (or an error thrown from the iterator). */
export type AgentEvent =
  | { type: 'started'; conversationId: string }
  | { type: 'delta'; text: string }
  | { type: 'tool_call'; name: string; args: Record<string, unknown> }
  | { type: 'tool_result'; name: string; content: string; isError: boolean; needs?: ToolNeeds }
  | { type: 'done'; response: MessageResponse };

/** The spec's Message response. */
export interface MessageResponse {
  response: string;
  conversation_id: string;
  model: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

export interface Agent {
  run(turn: AgentTurn): AsyncIterable<AgentEvent>;
}

/** Runs a turn to the end and returns its Message response. */
export async function runToCompletion(agent: Agent, turn: AgentTurn): Promise<MessageResponse> {
  for await (const event of agent.run(turn)) {
    if (event.type === 'done') return event.response;
  }
  throw new InternalError('the agent ended without an answer', { code: CommonErrorCode.Internal });
}

export function toUsage(usage: Usage): MessageResponse['usage'] {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.totalTokens,
  };
}
