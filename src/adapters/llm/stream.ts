import { CommonErrorCode, InternalError } from '../../errors.js';
import type { Completion, LlmEvent, ToolCall } from './port.js';

/** The AbortError the port promises, whatever reason the caller aborted with. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError'
    ? reason
    : new DOMException('The completion was aborted', 'AbortError');
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
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
