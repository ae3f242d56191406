import { useCallback, useEffect, useRef, useState } from 'react';
import type { ApiClient } from '../../../../shared/api/api-client';
import { ApiError, describeError } from '../../../../shared/api/api-error';
import { runPaths, type BuilderApi, type Run } from '../../api/builder-api';
import { streamRun, toRunEvents, type RunEvent } from '../../api/run-stream';
import { IDLE_RUN, applyRunEvent, replayRun, viewOfRun, withAnswer, type RunView } from './run-model';

/**
 * Where the details of a past run shown from the list stand: `live` for a run streamed here, `loading` while its
 * recorded events load, `unavailable` when the service has none for it (only its summary shows), or why they
 * could not be loaded.
 */
export type RunDetails = 'live' | 'loading' | 'loaded' | 'unavailable' | { error: string };

export interface RunControl {
  view: RunView;
  details: RunDetails;
  /** A stream is open. */
  streaming: boolean;
  /** Grows each time a stream ends: the moment to reload the list of past runs. */
  settled: number;
  start: (input: string) => void;
  /** Answers the question the shown run waits on; the rest of the run streams in. */
  resume: (answer: string) => void;
  /** Stops reading the stream (the service notices the closed connection). */
  stop: () => void;
  /** Shows a past run as it went, from its recorded events (and answers it, if it waits). */
  show: (run: Run) => void;
}

/** A workflow's runs as they stream: one stream at a time, closed when the component goes away. */
export function useRun(client: ApiClient, api: BuilderApi, workflowId: string | null): RunControl {
  const [view, setView] = useState<RunView>(IDLE_RUN);
  const [details, setDetails] = useState<RunDetails>('live');
  const [streaming, setStreaming] = useState(false);
  const [settled, setSettled] = useState(0);
  const abortRef = useRef<AbortController | null>(null);
  /** The loading of a past run's events: what a new run or an answer makes obsolete. */
  const detailsRef = useRef<AbortController | null>(null);

  useEffect(
    () => () => {
      abortRef.current?.abort();
      detailsRef.current?.abort();
    },
    [],
  );

  const open = useCallback(
    (path: string, body: unknown) => {
      abortRef.current?.abort();
      detailsRef.current?.abort();
      const controller = new AbortController();
      abortRef.current = controller;
      setStreaming(true);
      const onEvent = (event: RunEvent) => {
        const arrived = Date.now();
        if (!controller.signal.aborted) setView((current) => applyRunEvent(current, event, arrived));
      };
      streamRun(client, path, body, controller.signal, onEvent)
        .catch((failure: unknown) => {
          if (controller.signal.aborted) return;
          setView((current) => ({ ...current, status: 'failed', error: describeError(failure) }));
        })
        .finally(() => {
          if (abortRef.current === controller) {
            abortRef.current = null;
            setStreaming(false);
          }
          setSettled((n) => n + 1);
        });
    },
    [client],
  );

  const start = useCallback(
    (input: string) => {
      if (!workflowId) return;
      setView({ ...IDLE_RUN, status: 'starting', input });
      setDetails('live');
      open(runPaths.start(workflowId), { input });
    },
    [open, workflowId],
  );

  const resume = useCallback(
    (answer: string) => {
      if (!workflowId || !view.runId) return;
      setView((current) => withAnswer(current, answer));
      open(runPaths.resume(workflowId, view.runId), { answer });
    },
    [open, view.runId, workflowId],
  );

  const stop = useCallback(() => {
    const controller = abortRef.current;
    if (!controller) return;
    controller.abort();
    abortRef.current = null;
    setStreaming(false);
    setView((current) =>
      current.status === 'running' || current.status === 'starting'
        ? { ...current, status: 'cancelled', error: 'Stopped before the run finished.' }
        : current,
    );
  }, []);

  const show = useCallback(
    (run: Run) => {
      abortRef.current?.abort();
      abortRef.current = null;
      detailsRef.current?.abort();
      setStreaming(false);
      // The summary shows at once (a waiting run can be answered from it); the trace follows from the events.
      setView(viewOfRun(run));
      if (!workflowId) return;
      const controller = new AbortController();
      detailsRef.current = controller;
      setDetails('loading');
      api.runEvents(workflowId, run.run_id, controller.signal).then(
        (body) => {
          if (controller.signal.aborted) return;
          const events = toRunEvents(body);
          if (events.length === 0) {
            setDetails('unavailable');
            return;
          }
          setView(replayRun(run, events));
          setDetails('loaded');
        },
        (failure: unknown) => {
          if (controller.signal.aborted) return;
          setDetails(
            failure instanceof ApiError && failure.status === 404 ? 'unavailable' : { error: describeError(failure) },
          );
        },
      );
    },
    [api, workflowId],
  );

  return { view, details, streaming, settled, start, resume, stop, show };
}
