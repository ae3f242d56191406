/** A signal that follows others (`linkSignals`), and how to stop following them. */
export interface LinkedSignal {
  signal: AbortSignal;
  /** Takes the listeners off the sources; the signal no longer follows them. */
  release: () => void;
}

/**
 * Aborts `controller` as soon as any of `sources` aborts, with that one's reason (at once if one already has), and
 * answers how to stop following them. This is what `AbortSignal.any` does, through listeners of its own:
 * `AbortSignal.any` tracks its sources with weak references and a finalization registry, which cost some 50 µs per
 * call on the path of every chat turn. Releasing matters where a source outlives the controller's use (the
 * service's shutdown signal, which every turn follows): released once the use ends, nothing accumulates there.
 */
export function followSignals(controller: AbortController, sources: (AbortSignal | undefined)[]): () => void {
  const present = sources.filter((source): source is AbortSignal => source !== undefined);
  const aborted = present.find((source) => source.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return () => undefined;
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
  return release;
}

/** A new signal aborted as soon as any of `sources` is (`followSignals`). */
export function linkSignals(sources: (AbortSignal | undefined)[]): LinkedSignal {
  const controller = new AbortController();
  return { signal: controller.signal, release: followSignals(controller, sources) };
}
