import type { ApiClient } from '../../../../shared/api/api-client';
import { apiErrorFrom } from '../../../../shared/api/api-error';
import { readServerSentEvents } from '../../../../shared/api/sse';
import type { ToolCall, Usage } from '../../api/playground-api';
import { toChatEvent, type ChatEvent } from './chat-events';

/** The non-streamed answer, when a server replies with JSON in spite of the Accept header. */
interface ChatResponse {
  message_id?: string;
  content?: string;
  tool_calls?: ToolCall[];
  usage?: Usage;
}

/**
 * One chat turn over POST /api/playground/chat with server-sent events: the way in when WebSockets are not
 * available. Aborting the signal stops the turn (the server notices the disconnect). Resolves after `end`
 * or `error`; throws the server's error for a non-2xx answer.
 */
export async function streamChatOverHttp(
  client: ApiClient,
  sessionId: string,
  message: string,
  signal: AbortSignal,
  onEvent: (event: ChatEvent) => void,
): Promise<void> {
  const response = await client.fetch(client.url('/api/playground/chat'), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ session_id: sessionId, message, stream: true }),
    signal,
  });
  if (!response.ok) throw await apiErrorFrom(response);

  const type = response.headers.get('Content-Type') ?? '';
  if (!type.includes('text/event-stream') || response.body === null) {
    const reply = (await response.json()) as ChatResponse;
    for (const call of reply.tool_calls ?? []) {
      onEvent({ type: 'tool_call', id: call.id, name: call.name, args: call.args });
      if (call.result !== undefined) {
        onEvent({ type: 'tool_result', id: call.id, name: call.name, content: call.result, is_error: !!call.is_error });
      }
    }
    if (reply.content) onEvent({ type: 'token', content: reply.content });
    onEvent({ type: 'end', message_id: reply.message_id, cancelled: false, usage: reply.usage });
    return;
  }

  for await (const sse of readServerSentEvents(response.body)) {
    let data: unknown;
    try {
      data = JSON.parse(sse.data);
    } catch {
      data = { content: sse.data };
    }
    const record = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
    // Unnamed events may carry their type inside, as on the socket.
    const type = sse.event === 'message' && typeof record.type === 'string' ? record.type : sse.event;
    const event = toChatEvent(type, record);
    if (!event) continue;
    onEvent(event);
    if (event.type === 'end' || event.type === 'error') return;
  }
  if (!signal.aborted) onEvent({ type: 'error', message: 'The answer stream ended before the answer was complete.' });
}
