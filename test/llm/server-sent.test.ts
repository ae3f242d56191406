import { describe, expect, it } from 'vitest';
import { type ServerSentEvent, serverSentEvents } from '../../src/adapters/llm/server-sent.js';

/** A body that brings these pieces one read at a time; it records whether its reader cancelled it. */
function bodyOf(pieces: string[]) {
  const encoder = new TextEncoder();
  const state = { cancelled: false, sent: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const piece = pieces[state.sent++];
      if (piece === undefined) controller.close();
      else controller.enqueue(encoder.encode(piece));
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { body, state };
}

async function eventsOf(pieces: string[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(bodyOf(pieces).body)) events.push(event);
  return events;
}

describe('serverSentEvents', () => {
  it('reads data events with LF, CR LF and CR line ends, however the body is cut', async () => {
    const text = 'data: one\n\ndata: two\r\ndata: lines\r\n\r\ndata: three\r\rdata:four\n\n';
    const expected = ['one', 'two\nlines', 'three', 'four'].map((data) => ({ event: 'message', data }));
    expect(await eventsOf([text])).toEqual(expected);
    // Every cut, a CR LF split across two reads included.
    for (let at = 1; at < text.length; at++) {
      expect(await eventsOf([text.slice(0, at), text.slice(at)])).toEqual(expected);
    }
    expect(await eventsOf([...text])).toEqual(expected);
  });

  it('joins data lines, keeps event names, skips comments and fields it does not know', async () => {
    const events = await eventsOf([
      ': a comment\n',
      'event: error\ndata: {"a":\ndata:  1}\nid: 7\nretry: 10\n\n',
      'event: ping\n\n',
      'data\n\n',
    ]);
    expect(events).toEqual([
      { event: 'error', data: '{"a":\n 1}' },
      // An event without data is none; a bare `data` line is data that is empty.
      { event: 'message', data: '' },
    ]);
  });

  it('drops an event the body ended before its blank line', async () => {
    expect(await eventsOf(['data: whole\n\n', 'data: cut off'])).toEqual([{ event: 'message', data: 'whole' }]);
  });

  it('decodes characters split across reads', async () => {
    const bytes = new TextEncoder().encode('data: héllo ✓\n\n');
    const state = { sent: 0 };
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (state.sent >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(state.sent, state.sent + 1));
        state.sent += 1;
      },
    });
    const events: ServerSentEvent[] = [];
    for await (const event of serverSentEvents(body)) events.push(event);
    expect(events).toEqual([{ event: 'message', data: 'héllo ✓' }]);
  });

  it('cancels the body when its consumer stops early, and not when the body ends', async () => {
    const early = bodyOf(['data: 1\n\ndata: 2\n\n', 'data: 3\n\n']);
    for await (const event of serverSentEvents(early.body)) {
      expect(event.data).toBe('1');
      break;
    }
    expect(early.state.cancelled).toBe(true);

    const whole = bodyOf(['data: 1\n\n']);
    for await (const _ of serverSentEvents(whole.body)) void _;
    expect(whole.state.cancelled).toBe(false);
  });
});
