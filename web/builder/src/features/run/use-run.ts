import { useCallback, useEffect, useRef, useState } from 'react';
import type { ApiClient } from '../../../../shared/api/api-client';
import { describeError } from '../../../../shared/api/api-error';
import { runPaths, type Run } from '../../api/builder-api';
import { streamRun, type RunEvent } from '../../api/run-stream';
import { IDLE_RUN, applyRunEvent, viewOfRun, withAnswer, type RunView } from './run-model';

export interface RunControl {
  view: RunView;
  /** A stream is open. */
  streaming: boolean;
  /** Grows each time a stream ends: the moment to reload the list of past runs. */
  settled: number;
  start: (input: string) => void;
  /** Answers the question the shown run waits on; the rest of the run streams in. */
  resume: (answer: string) => void;
  /** Stops reading the stream (the service notices the closed connection). */
  stop: () => void;
  /** Shows a past run (to answer it, if it waits). */
  show: (run: Run) => void;
}

/** A workflow's runs as they stream: one stream at a time, closed when the component goes away. */
export function useRun(client: ApiClient, workflowId: string | null): RunControl {
  const [view, setView] = useState<RunView>(IDLE_RUN);
  const [streaming, setStreaming] = useState(false);
  const [settled, setSettled] = useState(0);
  const abortRef = useRef<AbortController | null>(null);

  useEffect(() => () => abortRef.current?.abort(), []);

  const open = useCallback(
    (path: string, body: unknown) => {
      abortRef.current?.abort();
      const controller = new AbortController();
      abortRef.current = controller;
      setStreaming(true);
      const onEvent = (event: RunEvent) => {
        if (!controller.signal.aborted) setView((current) => applyRunEvent(current, event));
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

  const show = useCallback((run: Run) => {
    abortRef.current?.abort();
    abortRef.current = null;
    setStreaming(false);
    setView(viewOfRun(run));
  }, []);

  return { view, streaming, settled, start, resume, stop, show };
}
