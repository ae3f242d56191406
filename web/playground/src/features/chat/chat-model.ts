import type { Message, Usage } from '../../api/playground-api';
import type { ChatEvent } from './chat-events';

export interface TextPart {
  kind: 'text';
  text: string;
}

/**
 * What a call needs of the person before it can succeed, as the stream said right after its result: their approval
 * of this very call (approved, the same call runs once when the agent makes it again), or their account at the
 * tool's server. Only streamed answers have it; stored ones do not keep it.
 */
export type ToolNeeds =
  | { kind: 'approval'; approvalId: string; tool: string; args: unknown }
  | { kind: 'connect'; connectionId: string; connectUrl?: string; tool: string };

export interface ToolPart {
  kind: 'tool';
  id: string;
  name: string;
  args: unknown;
  result?: unknown;
  isError: boolean;
  done: boolean;
  needs?: ToolNeeds;
}

/** An assistant answer is the text and tool calls in the order they happened. */
export type Part = TextPart | ToolPart;

export type MessageStatus = 'done' | 'streaming' | 'stopped' | 'failed';

export interface ChatMessage {
  /** Stable React key: the server id, or a local one until the server names it. */
  key: string;
  id?: string;
  role: 'user' | 'assistant';
  timestamp: string;
  parts: Part[];
  status: MessageStatus;
  error?: string;
  usage?: Usage;
  /** Measured in this browser: until the first token or tool call, and until the end. */
  timing?: { firstOutputMs?: number; totalMs?: number };
  /** Belongs to the turn in flight, so a history load that lands meanwhile keeps it. */
  pending?: boolean;
}

export function messageText(message: ChatMessage): string {
  return message.parts
    .filter((p): p is TextPart => p.kind === 'text')
    .map((p) => p.text)
    .join('');
}

/** A stored message. Its order of text and tool calls is not kept, so the calls (which came first) lead. */
export function fromStoredMessage(message: Message): ChatMessage {
  const parts: Part[] = [];
  for (const call of message.tool_calls ?? []) {
    parts.push({
      kind: 'tool',
      id: call.id,
      name: call.name,
      args: call.args,
      result: call.result,
      isError: call.is_error === true,
      done: call.result !== undefined || call.is_error === true,
    });
  }
  if (message.content) parts.push({ kind: 'text', text: message.content });
  return {
    key: message.id,
    id: message.id,
    role: message.role,
    timestamp: message.timestamp,
    parts,
    status: message.cancelled ? 'stopped' : 'done',
    ...(message.usage && { usage: message.usage }),
  };
}

function findCall(parts: Part[], event: { id?: string; name?: string }): number {
  if (event.id !== undefined) {
    const byId = parts.findIndex((p) => p.kind === 'tool' && p.id === event.id);
    if (byId !== -1) return byId;
  }
  // Older servers leave the id out: the oldest open call with that name, else the oldest open call.
  const open = (p: Part): p is ToolPart => p.kind === 'tool' && !p.done;
  const byName = parts.findIndex((p) => open(p) && (event.name === undefined || p.name === event.name));
  return byName !== -1 ? byName : parts.findIndex(open);
}

/** Applies streamed events to the parts of the answer being written. Returns a new array. */
export function applyEvents(parts: Part[], events: ChatEvent[]): Part[] {
  const next = [...parts];
  for (const event of events) {
    if (event.type === 'token') {
      if (!event.content) continue;
      const last = next[next.length - 1];
      if (last?.kind === 'text') next[next.length - 1] = { kind: 'text', text: last.text + event.content };
      else next.push({ kind: 'text', text: event.content });
    } else if (event.type === 'tool_call') {
      next.push({
        kind: 'tool',
        id: event.id ?? `call-${next.length}`,
        name: event.name,
        args: event.args,
        isError: false,
        done: false,
      });
    } else if (event.type === 'tool_result') {
      const index = findCall(next, event);
      const call = next[index];
      if (call?.kind === 'tool') {
        next[index] = { ...call, result: event.content, isError: event.is_error, done: true };
      } else {
        next.push({
          kind: 'tool',
          id: event.id ?? `result-${next.length}`,
          name: event.name ?? 'tool',
          args: undefined,
          result: event.content,
          isError: event.is_error,
          done: true,
        });
      }
    } else if (event.type === 'approval_required' || event.type === 'connect_required') {
      const needs: ToolNeeds =
        event.type === 'approval_required'
          ? { kind: 'approval', approvalId: event.approval_id, tool: event.tool, args: event.arguments }
          : { kind: 'connect', connectionId: event.connection_id, connectUrl: event.connect_url, tool: event.tool };
      // It follows its call's result: the call of that id, else the latest one of that tool.
      let index = event.id === undefined ? -1 : next.findIndex((p) => p.kind === 'tool' && p.id === event.id);
      if (index === -1) index = next.findLastIndex((p) => p.kind === 'tool' && p.name === event.tool);
      const call = next[index];
      if (call?.kind === 'tool') next[index] = { ...call, needs };
    }
  }
  return next;
}
