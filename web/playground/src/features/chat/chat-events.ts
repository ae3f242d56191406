import type { Usage } from '../../api/playground-api';

/** What the service streams during one chat turn, over the WebSocket or as server-sent events. */
export type ChatEvent =
  | { type: 'token'; content: string }
  | { type: 'tool_call'; id?: string; name: string; args: unknown }
  | { type: 'tool_result'; id?: string; name?: string; content: unknown; is_error: boolean }
  /** Right after a call's result: a person must approve this call of a tool that changes data, then it runs once. */
  | { type: 'approval_required'; id?: string; approval_id: string; tool: string; arguments: unknown }
  /** Right after a call's result: the person must connect their account at the tool's server (OAuth) first. */
  | { type: 'connect_required'; id?: string; connection_id: string; connect_url?: string; tool: string }
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
    case 'approval_required': {
      const approvalId = text(data.approval_id);
      if (approvalId === undefined) return undefined;
      return {
        type,
        id: text(data.id),
        approval_id: approvalId,
        tool: text(data.tool) ?? 'tool',
        arguments: data.arguments ?? {},
      };
    }
    case 'connect_required': {
      const connectionId = text(data.connection_id);
      if (connectionId === undefined) return undefined;
      return {
        type,
        id: text(data.id),
        connection_id: connectionId,
        connect_url: text(data.connect_url),
        tool: text(data.tool) ?? 'tool',
      };
    }
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
