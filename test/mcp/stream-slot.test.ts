import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app.js';
import { RateLimitError } from '../../src/errors.js';
import { Lifecycle } from '../../src/lifecycle.js';
import type { Caller } from '../../src/ports/caller.js';
import { type StreamSlotDeps, openStreamSlot } from '../../transports/stream-slot.js';
import { startTestApp } from '../helpers/app.js';

// The one helper every wire opens its streams with: the app's real policy point and metrics, a lifecycle of the
// test's own (so that stopping it stops nothing else).

const apps: App[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

const alice: Caller = {
  kind: 'user',
  subject: 'user:alice',
  username: 'alice',
  roles: [],
  sessionId: undefined,
  via: 'bearer',
};

async function setUp(): Promise<{ deps: StreamSlotDeps; lifecycle: Lifecycle; open: () => Promise<number> }> {
  const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', MCP_MAX_CONCURRENT_STREAMS: '1' });
  apps.push(app);
  const lifecycle = new Lifecycle();
  lifecycle.markRunning();
  const open = async () =>
    (await app.services.mcp.core.metrics.connections.get()).values.find((v) => v.labels.server === 'rest')?.value ?? 0;
  return {
    deps: { policy: app.services.mcp.core.policy, metrics: app.services.mcp.core.metrics, lifecycle },
    lifecycle,
    open,
  };
}

describe('a stream slot', () => {
  it('holds one of the caller’s streams and one connection until released, once however often released', async () => {
    const { deps, open } = await setUp();
    const slot = openStreamSlot(deps, alice, { server: 'rest' });
    expect(await open()).toBe(1);
    expect(() => openStreamSlot(deps, alice, { server: 'rest' })).toThrow(RateLimitError);
    // A refused slot took nothing.
    expect(await open()).toBe(1);
    slot.release();
    slot.release();
    expect(await open()).toBe(0);
    expect(slot.signal.aborted).toBe(true);
    const onRelease = vi.fn();
    const again = openStreamSlot(deps, alice, { server: 'rest', onRelease });
    expect(await open()).toBe(1);
    again.release();
    again.release();
    expect(onRelease).toHaveBeenCalledTimes(1);
    expect(await open()).toBe(0);
  });

  it('is released when its client goes away', async () => {
    const { deps, open } = await setUp();
    const client = new EventEmitter();
    const slot = openStreamSlot(deps, alice, { server: 'rest', endsWith: client });
    client.emit('close');
    expect(slot.signal.aborted).toBe(true);
    expect(await open()).toBe(0);
    expect(client.listenerCount('close')).toBe(0);
    openStreamSlot(deps, alice, { server: 'rest' }).release();
  });

  it('winds the stream down when the service stops, and forgets the hook once released', async () => {
    const { deps, lifecycle } = await setUp();
    const onStop = vi.fn();
    const released = openStreamSlot(deps, alice, { server: 'rest', onStop });
    released.release();
    const held = openStreamSlot(deps, alice, { server: 'rest', onStop });
    lifecycle.beginStop();
    expect(onStop).toHaveBeenCalledTimes(1);
    expect(held.signal.aborted).toBe(true);
    held.release();
  });

  it('leaves a stream that is to finish (a chat turn) running when the service stops, until it is released', async () => {
    const { deps, lifecycle, open } = await setUp();
    const onStop = vi.fn();
    const turn = openStreamSlot(deps, alice, { server: 'rest', shutdown: 'finish', onStop });
    lifecycle.beginStop({ drainMs: 60_000 });
    // The chat-turn service decides whether the turn finishes within the drain: the slot neither ends nor frees it.
    expect(turn.signal.aborted).toBe(false);
    expect(onStop).not.toHaveBeenCalled();
    expect(await open()).toBe(1);
    turn.release();
    expect(turn.signal.aborted).toBe(true);
    expect(await open()).toBe(0);
  });

  it('beats while held and stops beating once released', async () => {
    const { deps } = await setUp();
    vi.useFakeTimers();
    const beat = vi.fn();
    const slot = openStreamSlot(deps, alice, { server: 'rest', heartbeat: { intervalMs: 1_000, beat } });
    vi.advanceTimersByTime(3_500);
    expect(beat).toHaveBeenCalledTimes(3);
    slot.release();
    vi.advanceTimersByTime(5_000);
    expect(beat).toHaveBeenCalledTimes(3);
  });
});
