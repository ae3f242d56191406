/** One server-sent event: its type (`message` unless it names one) and its data lines, joined by newlines. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/** A line ends in CR LF, LF or CR. */
const LINE_END = /\r\n|\n|\r/;

/**
 * The WHATWG event-stream format, read as its text arrives: `field: value` lines, comments starting with a colon, a
 * blank line ending each event; an event without data is not one. `feed` takes each next piece of the text and
 * answers the events it completed; `end` answers those the end of the body completes (none: a line that never
 * ended is read, but no blank line follows it).
 */
export class EventStreamParser {
  #pending = '';
  #event = '';
  #data: string[] = [];

  feed(text: string): ServerSentEvent[] {
    return this.#read(this.#pending + text, false);
  }

  end(): ServerSentEvent[] {
    return this.#read(this.#pending, true);
  }

  #read(text: string, done: boolean): ServerSentEvent[] {
    // A CR at the end may be the first half of a CR LF: it waits for what follows.
    const carried = !done && text.endsWith('\r') ? '\r' : '';
    const lines = (carried ? text.slice(0, -1) : text).split(LINE_END);
    // The last piece is a line still coming (at the end of the body, one that never ended).
    this.#pending = done ? '' : lines.pop()! + carried;
    const events: ServerSentEvent[] = [];
    for (const line of lines) {
      if (line === '') {
        if (this.#data.length > 0) events.push({ event: this.#event || 'message', data: this.#data.join('\n') });
        this.#event = '';
        this.#data = [];
        continue;
      }
      const colon = line.indexOf(':');
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      const rest = colon < 0 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
      if (field === 'data') this.#data.push(rest);
      else if (field === 'event') this.#event = rest;
    }
    return events;
  }
}

/**
 * The events of a `text/event-stream` body as they arrive. The reader is released, and the body cancelled, when the
 * consumer stops early.
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new EventStreamParser();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        yield* parser.feed(decoder.decode());
        yield* parser.end();
        finished = true;
        return;
      }
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
