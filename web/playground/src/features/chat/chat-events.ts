import type { Usage } from '../../api/playground-api';

/** What the service streams during one chat turn, over the WebSocket or as server-sent events. */
export type ChatEvent =
  | { type: 'token'; content: string }
  | { type: 'tool_call'; id?: string; name: string; args: unknown }
  | { type: 'tool_result'; id?: string; name?: string; content: unknown; is_error: boolean }
  | { type: 'end'; message_id?: string; cancelled: boolean; usage?: Usage }
  | { type: 'error'; message: string; code?: string };

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Reads one event from its wire form (`{type, ...}` on the socket; the SSE event name plus its data object),
 * tolerating the optional fields older servers leave out. Unknown types give undefined.
 */
export function toChatEvent(type: string, data: Record<string, unknown>): ChatEvent | undefined {
  switch (type) {
    case 'token':
      return { type, content: text(data.content) ?? text(data.delta) ?? '' };
    case 'tool_call':
      return { type, id: text(data.id), name: text(data.name) ?? 'tool', args: data.args ?? data.arguments ?? {} };
    case 'tool_result':
      return {
        type,
        id: text(data.id),
        name: text(data.name),
        content: data.content ?? data.result,
        is_error: data.is_error === true,
      };
    case 'end': {
      const usage = typeof data.usage === 'object' && data.usage !== null ? (data.usage as Usage) : undefined;
      return { type, message_id: text(data.message_id), cancelled: data.cancelled === true, usage };
    }
    case 'error':
      return { type, message: text(data.message) ?? 'The answer failed.', code: text(data.code) };
    default:
      return undefined;
  }
}
