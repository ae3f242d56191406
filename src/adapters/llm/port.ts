import type { HealthCheck } from '../../ports/health.js';

/**
 * A chat model. Implementations: `offline` (deterministic, in-process, the default) and `openai` (any
 * OpenAI-compatible chat-completions endpoint). Both pass `test/contracts/llm.contract.ts`.
 */
export interface ToolCall {
  /** Provider-assigned id that the tool's result message refers back to. */
  id: string;
  name: string;
  /** Parsed JSON arguments. */
  arguments: Record<string, unknown>;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; content: string; toolCallId: string; name: string };

/** A tool the model may call: a name, what it does, and its arguments as a JSON Schema object. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The connected MCP server a tool comes from (none for the service's own); not sent to the model. */
  server?: { id: string; slug: string; name: string; transport: string; url: string | null };
  /** A connected tool's own name on its server (`name` may hold it shortened or made safe); not sent to the model. */
  upstreamName?: string;
  /** The tool's MCP annotations (read-only, destructive…); not sent to the model. */
  annotations?: Record<string, unknown>;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export type FinishReason = 'stop' | 'tool_calls' | 'length';

/** What a streamed completion yields: text fragments as they come, then tool calls (if any), then `done`. */
export type LlmEvent =
  | { type: 'delta'; text: string }
  | { type: 'tool_calls'; calls: ToolCall[] }
  | { type: 'done'; usage: Usage; finishReason: FinishReason };

export interface CompletionRequest {
  messages: ChatMessage[];
  /** Another model of the same provider than the configured one (a workflow's agent node may name one). */
  model?: string;
  tools?: ToolSpec[];
  /**
   * Cancels the request; the stream then rejects with an AbortError whose `usage` (`usageOfAborted`) is what the
   * call used until it stopped: the provider's count when it sent one, else the provider's estimate.
   */
  signal?: AbortSignal;
  maxTokens?: number;
  temperature?: number;
}

export interface Completion {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  finishReason: FinishReason;
}

export interface LlmProvider {
  readonly provider: 'offline' | 'openai';
  /** The model name reported in Message responses and health details. */
  readonly model: string;
  stream(request: CompletionRequest): AsyncIterable<LlmEvent>;
  /** The whole completion at once (collects `stream`). */
  complete(request: CompletionRequest): Promise<Completion>;
  healthCheck(): HealthCheck;
}

/**
 * The AbortError a provider's stream rejects with when the caller stops it: the caller's reason is its cause, and
 * it says what the call used until then.
 */
export class CompletionAborted extends Error {
  override readonly name = 'AbortError';

  constructor(
    /** The tokens the call used until it stopped: the provider's count if it sent one, else its estimate. */
    readonly usage: Usage,
    reason: unknown,
  ) {
    super('The completion was aborted', { cause: reason });
  }
}

/** What a stopped completion used, when `error` is the AbortError its provider ended it with. */
export function usageOfAborted(error: unknown): Usage | undefined {
  return error instanceof CompletionAborted ? error.usage : undefined;
}
