import { randomUUID } from 'node:crypto';
import type { ChatMessage, ToolCall, Usage } from '../../adapters/llm/port.js';
import type { NewMessage } from '../conversations/index.js';

/** What a tool call the stop cut off is answered with: the model requires every call answered. */
export const STOPPED_TOOL_RESULT = 'The call was stopped before it answered.';

/**
 * A turn as far as it came before its caller stopped it, rebuilt from what it streamed, to be kept in its
 * conversation: the caller's message, each tool call with its result, and the text that came last, exactly as
 * it streamed. The turn's usage rides on the first and the last message, as on a turn the agent records.
 */
export class StoppedTurn {
  readonly #steps: ChatMessage[] = [];
  #text = '';
  #open: ToolCall | undefined;

  delta(text: string): void {
    this.#text += text;
  }

  /** A call: the text before it is the content of the assistant message that made it. */
  toolCall(name: string, args: Record<string, unknown>): void {
    this.#answerOpen();
    // The stream does not carry the provider's ids; the kept conversation only needs them to pair up.
    this.#open = { id: `call_${randomUUID()}`, name, arguments: args };
    this.#steps.push({ role: 'assistant', content: this.#text, toolCalls: [this.#open] });
    this.#text = '';
  }

  toolResult(name: string, content: string): void {
    if (this.#open?.name !== name) return;
    this.#steps.push({ role: 'tool', content, toolCallId: this.#open.id, name });
    this.#open = undefined;
  }

  /** The messages to append to the conversation: what the caller saw, and what the model may see next turn. */
  messages(userMessage: string, usage: Usage): NewMessage[] {
    this.#answerOpen();
    const messages: NewMessage[] = [{ role: 'user', content: userMessage }, ...this.#steps];
    // Stopped before any text after its last call (or before any at all), the turn has no answer to keep.
    if (this.#text !== '') messages.push({ role: 'assistant', content: this.#text });
    messages[0] = { ...messages[0]!, promptTokens: usage.promptTokens };
    const last = messages.length - 1;
    messages[last] = { ...messages[last]!, completionTokens: usage.completionTokens };
    return messages;
  }

  #answerOpen(): void {
    if (!this.#open) return;
    this.toolResult(this.#open.name, STOPPED_TOOL_RESULT);
  }
}
