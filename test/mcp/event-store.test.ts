import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { BoundedEventStore, type SessionEventStore } from '../../src/mcp/event-store.js';

/** The event store the streamable-HTTP sessions resume from: what each session's view stores, finds and replays. */

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n } });

async function replayed(store: SessionEventStore, after: string) {
  const sent: { id: string; n: unknown }[] = [];
  const streamId = await store.replayEventsAfter(after, {
    send: (id, message) => {
      sent.push({ id, n: (message as { params?: { n?: unknown } }).params?.n });
      return Promise.resolve();
    },
  });
  return { streamId, sent: sent.map((e) => e.n), ids: sent.map((e) => e.id) };
}

describe('BoundedEventStore', () => {
  it('keeps each session’s streams to that session, under ids nobody can guess', async () => {
    const store = new BoundedEventStore();
    const alice = store.forSession('user:alice', 'session-1');
    const bob = store.forSession('user:bob', 'session-2');
    // The SDK names every session's standalone stream the same.
    const first = await alice.storeEvent('_GET_stream', note(1));
    await alice.storeEvent('_GET_stream', note(2));
    const bobs = await bob.storeEvent('_GET_stream', note(3));
    expect(first).toMatch(/^[A-Za-z0-9_-]{22}\.1$/);
    expect(bobs.split('.')[0]).not.toBe(first.split('.')[0]);

    expect(await alice.getStreamIdForEventId(first)).toBe('_GET_stream');
    expect(await replayed(alice, first)).toMatchObject({ streamId: '_GET_stream', sent: [2] });

    expect(await bob.getStreamIdForEventId(first)).toBeUndefined();
    expect((await replayed(bob, first)).sent).toEqual([]);
    // The same session id under another caller is another scope.
    const impostor = store.forSession('user:bob', 'session-1');
    expect(await impostor.getStreamIdForEventId(first)).toBeUndefined();
    expect((await replayed(impostor, first)).sent).toEqual([]);
    for (const guess of ['_GET_stream_0', `${first.split('.')[0]}.9`, 'nonsense', '']) {
      expect(await alice.getStreamIdForEventId(guess), guess).toBeUndefined();
      expect((await replayed(alice, guess)).sent, guess).toEqual([]);
    }
  });

  it('replays only the later events of the stream the id belongs to, under the ids they were stored with', async () => {
    const store = new BoundedEventStore();
    const session = store.forSession('user:alice', 'session-1');
    const first = await session.storeEvent('request-a', note(1));
    await session.storeEvent('_GET_stream', note(2));
    const third = await session.storeEvent('request-a', note(3));
    const fourth = await session.storeEvent('request-a', note(4));
    expect(await replayed(session, first)).toEqual({ streamId: 'request-a', sent: [3, 4], ids: [third, fourth] });
    expect((await replayed(session, fourth)).sent).toEqual([]);
  });

  it('keeps the newest events of a stream, and resumes an id older than those from what is left', async () => {
    const store = new BoundedEventStore(3, 100);
    const session = store.forSession('user:alice', 'session-1');
    const ids = [];
    for (let n = 1; n <= 5; n++) ids.push(await session.storeEvent('_GET_stream', note(n)));
    expect(store.size).toBe(3);
    expect((await replayed(session, ids[0]!)).sent).toEqual([3, 4, 5]);
    expect((await replayed(session, ids[3]!)).sent).toEqual([5]);
  });

  it('drops the stream written to least recently when the total is exceeded', async () => {
    const store = new BoundedEventStore(10, 4);
    const alice = store.forSession('user:alice', 'session-1');
    const bob = store.forSession('user:bob', 'session-2');
    const old = await alice.storeEvent('_GET_stream', note(1));
    const quiet = await bob.storeEvent('_GET_stream', note(2));
    await bob.storeEvent('_GET_stream', note(3));
    await alice.storeEvent('_GET_stream', note(4));
    await alice.storeEvent('_GET_stream', note(5));
    expect(store.size).toBe(3);
    expect(await bob.getStreamIdForEventId(quiet)).toBeUndefined();
    expect((await replayed(alice, old)).sent).toEqual([4, 5]);
  });

  it('forgets a session’s events when it ends, and keeps none it is given afterwards', async () => {
    const store = new BoundedEventStore();
    const alice = store.forSession('user:alice', 'session-1');
    const bob = store.forSession('user:bob', 'session-2');
    const hers = await alice.storeEvent('_GET_stream', note(1));
    await alice.storeEvent('request-a', note(2));
    const his = await bob.storeEvent('_GET_stream', note(3));
    alice.drop();
    expect(store.size).toBe(1);
    expect(await alice.getStreamIdForEventId(hers)).toBeUndefined();
    await alice.storeEvent('_GET_stream', note(4));
    expect(store.size).toBe(1);
    expect(await bob.getStreamIdForEventId(his)).toBe('_GET_stream');
  });
});
