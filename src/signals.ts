/** A signal that follows others (`linkSignals`), and how to stop following them. */
export interface LinkedSignal {
  signal: AbortSignal;
  /** Takes the listeners off the sources; the signal no longer follows them. */
  release: () => void;
}

/**
 * A signal aborted as soon as any of `sources` is, with that one's reason: what `AbortSignal.any` answers, through
 * listeners of its own. `AbortSignal.any` tracks its sources with weak references and a finalization registry, which
 * cost some 50 µs per call on the path of every chat turn. `release` matters where a source outlives the signal's use
 * (the service's shutdown signal, which every turn follows): called once the use ends, nothing accumulates there.
 */
export function linkSignals(sources: (AbortSignal | undefined)[]): LinkedSignal {
  const controller = new AbortController();
  const present = sources.filter((source): source is AbortSignal => source !== undefined);
  const aborted = present.find((source) => source.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  const listeners = present.map((source) => {
    const onAbort = () => {
      release();
      controller.abort(source.reason);
    };
    source.addEventListener('abort', onAbort, { once: true });
    return { source, onAbort };
  });
  const release = () => {
    for (const { source, onAbort } of listeners) source.removeEventListener('abort', onAbort);
  };
  return { signal: controller.signal, release };
}
