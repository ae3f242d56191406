export interface ServerSentEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Parses a whole `text/event-stream` body whose events carry JSON data. */
export function parseEvents(text: string): ServerSentEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice('event: '.length) ?? 'message';
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice('data: '.length))
        .join('\n');
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}
