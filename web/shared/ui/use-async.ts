import { useCallback, useEffect, useRef, useState } from 'react';

export interface AsyncState<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Runs the loader again, keeping the current data on screen until the new data arrives. */
  reload: () => void;
}

/**
 * Loads data when `key` changes (and on reload), dropping answers that arrive after a newer request started
 * or after unmount. A null key means "nothing to load".
 */
export function useAsync<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>): AsyncState<T> {
  const [generation, setGeneration] = useState(0);
  /** The last answer that arrived, with the request it answers. */
  const [settled, setSettled] = useState<{ key: string; generation: number; data?: T; error?: unknown } | null>(null);
  const loadRef = useRef(load);

  useEffect(() => {
    loadRef.current = load;
  });

  useEffect(() => {
    if (key === null) return undefined;
    const controller = new AbortController();
    loadRef.current(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setSettled({ key, generation, data });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setSettled((previous) => ({
          key,
          generation,
          data: previous?.key === key ? previous.data : undefined,
          error,
        }));
      },
    );
    return () => controller.abort();
  }, [key, generation]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const current = key !== null && settled?.key === key ? settled : undefined;
  const fresh = current?.generation === generation;
  return {
    data: current?.data,
    error: fresh ? current.error : undefined,
    loading: key !== null && !fresh,
    reload,
  };
}

/** Calls `reload` whenever `signal` changes after the first render (a refresh counter, for instance). */
export function useReloadOn(signal: unknown, reload: () => void): void {
  const seen = useRef(signal);
  useEffect(() => {
    if (Object.is(seen.current, signal)) return;
    seen.current = signal;
    reload();
  }, [signal, reload]);
}
