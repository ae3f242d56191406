import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkSignals } from '../src/signals.js';

describe('linkSignals', () => {
  it('aborts with the reason of whichever source aborts first, and only once', () => {
    const first = new AbortController();
    const second = new AbortController();
    const { signal } = linkSignals([first.signal, undefined, second.signal]);
    expect(signal.aborted).toBe(false);
    second.abort(new Error('second'));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toEqual(new Error('second'));
    first.abort(new Error('first'));
    expect(signal.reason).toEqual(new Error('second'));
    // Once aborted, it follows nothing any more.
    expect(getEventListeners(first.signal, 'abort')).toHaveLength(0);
  });

  it('is aborted at once when a source already is', () => {
    const done = new AbortController();
    done.abort('already');
    const { signal } = linkSignals([new AbortController().signal, done.signal]);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('already');
  });

  it('leaves nothing on a source that outlives it once released', () => {
    const shutdown = new AbortController();
    for (let turn = 0; turn < 1000; turn++) {
      const linked = linkSignals([new AbortController().signal, shutdown.signal]);
      linked.release();
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
    const kept = linkSignals([shutdown.signal]);
    shutdown.abort('stopping');
    expect(kept.signal.reason).toBe('stopping');
  });
});
