import { EventEmitter } from 'node:events';
import type { Broadcast } from './port.js';

/** Broadcast within this process: the default, when this instance is the only one. */
export function createMemoryBroadcast(): Broadcast {
  const events = new EventEmitter();
  events.setMaxListeners(0);
  return {
    publish(channel, message) {
      // Delivered after the publisher's turn, as a network round trip would be.
      queueMicrotask(() => events.emit(channel, message));
      return Promise.resolve();
    },
    subscribe(channel, listener) {
      events.on(channel, listener);
      return () => events.off(channel, listener);
    },
    close() {
      events.removeAllListeners();
      return Promise.resolve();
    },
  };
}
