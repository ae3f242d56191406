import type { ServerResponse } from 'node:http';

/** One server-sent event: its type and its data as JSON. */
export function eventText(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * For a response that stays open (an event stream), once its head is written: Node keeps the head (`_header`) for
 * as long as the response lasts, as it built it, some 35 strings concatenated one to the next, about 2 KB for a
 * 350-byte head. Reading a character of it makes V8 flatten it in place, into one string, and the pieces go.
 */
export function flattenHead(res: ServerResponse): void {
  const head = (res as ServerResponse & { _header?: unknown })._header;
  if (typeof head === 'string') head.charCodeAt(0);
}
