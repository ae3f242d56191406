import { CommonErrorCode, InternalError } from '../../errors.js';
import { type Completion, CompletionAborted, type LlmEvent, type ToolCall, type Usage } from './port.js';

export const NO_USAGE: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** The AbortError for a completion `signal` stopped, with what it used until then (nothing by default). */
export function abortError(signal: AbortSignal, usage: Usage = NO_USAGE): Error {
  return new CompletionAborted(usage, signal.reason);
}

export function throwIfAborted(signal: AbortSignal | undefined, usage?: Usage): void {
  if (signal?.aborted) throw abortError(signal, usage);
}

/**
 * About how many tokens `text` is for a provider that cannot say (it never sends a count for a stream it did not
 * finish): a token is about four characters of English text.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** A provider's `complete`: its own stream, gathered up to the `done` event. */
export async function collectCompletion(events: AsyncIterable<LlmEvent>): Promise<Completion> {
  let text = '';
  const toolCalls: ToolCall[] = [];
  for await (const event of events) {
    if (event.type === 'delta') text += event.text;
    else if (event.type === 'tool_calls') toolCalls.push(...event.calls);
    else return { text, toolCalls, usage: event.usage, finishReason: event.finishReason };
  }
  throw new InternalError('LLM stream ended without a done event', { code: CommonErrorCode.Internal });
}
