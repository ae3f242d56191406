/** One server-sent event: its type (`message` unless it names one) and its data lines, joined by newlines. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/** A line ends in CR LF, LF or CR. */
const LINE_END = /\r\n|\n|\r/;

/**
 * The events of a `text/event-stream` body as they arrive (the WHATWG event-stream format: `field: value` lines,
 * comments starting with a colon, a blank line ending each event; an event without data is not one). The reader is
 * released, and the body cancelled, when the consumer stops early.
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  let event = '';
  let data: string[] = [];
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      let text = pending + (done ? decoder.decode() : decoder.decode(value, { stream: true }));
      // A CR at the end may be the first half of a CR LF: it waits for what follows.
      const carried = !done && text.endsWith('\r') ? '\r' : '';
      if (carried) text = text.slice(0, -1);
      const lines = text.split(LINE_END);
      // The last piece is a line still coming (at the end of the body, one that never ended: no event follows).
      pending = done ? '' : lines.pop()! + carried;
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const rest = colon < 0 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
        if (field === 'data') data.push(rest);
        else if (field === 'event') event = rest;
      }
      if (done) {
        finished = true;
        return;
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
