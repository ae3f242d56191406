import { useCallback, useMemo, useSyncExternalStore } from 'react';
import { PreviewCanvas } from '../../builder/src/features/editor/preview-canvas';
import { RunTimeline } from '../../builder/src/features/run/run-panel';
import {
  IDLE_RUN,
  currentNode,
  replayRun,
  travelledSteps,
  visitedNodes,
  withAnswer,
  type RunView,
} from '../../builder/src/features/run/run-model';
import type { HostSession, ViewState } from './host-session';

/** The run as the builder's run model shows it: replayed from what the service recorded, where it stands now. */
function runViewOf(state: ViewState): RunView {
  if (!state.run) return { ...IDLE_RUN, status: 'starting', input: state.input ?? '' };
  const view = replayRun(state.run, state.events);
  return state.busy === 'answer' && view.status === 'waiting' ? withAnswer(view, '') : view;
}

/** The workflow run view: the run's graph with where it is, its steps as they go, its question, its output. */
export function RunViewApp({ session }: { session: HostSession }) {
  const state = useSyncExternalStore(session.subscribe, session.snapshot);
  const view = useMemo(() => runViewOf(state), [state]);
  const progress = useMemo(
    () => ({ running: currentNode(view), visited: visitedNodes(view), travelled: travelledSteps(view) }),
    [view],
  );
  const describeNode = useCallback(
    (id: string) => {
      const node = state.graph?.nodes.find((n) => n.id === id);
      if (!node) return undefined;
      const label = (node.data as { label?: unknown } | undefined)?.label;
      return { name: typeof label === 'string' && label ? label : id, type: node.type };
    },
    [state.graph],
  );
  const onAnswer = useCallback((answer: string) => void session.answer(answer), [session]);
  const title = state.graph?.name ?? state.title ?? 'Workflow run';

  return (
    <main className="run-view" aria-busy={state.phase !== 'settled'}>
      <header className="run-view__head">
        <h1 className="run-view__title">{title}</h1>
        {view.status === 'waiting' ? (
          <button
            type="button"
            className="button button--small"
            onClick={() => void session.stop()}
            disabled={state.busy !== null}
          >
            {state.busy === 'stop' ? 'Stopping…' : 'Stop run'}
          </button>
        ) : null}
      </header>
      {state.phase === 'connecting' ? (
        <p className="panel-note" role="status">
          Connecting to the host…
        </p>
      ) : null}
      {state.graph ? (
        <PreviewCanvas
          definition={state.graph}
          label={`The workflow "${title}" and where the run is`}
          progress={progress}
        />
      ) : null}
      <RunTimeline
        view={view}
        details="live"
        describeNode={describeNode}
        onSelectNode={() => undefined}
        onAnswer={onAnswer}
        busy={state.busy !== null}
        focusQuestion={false}
      />
      {state.error ? (
        <p className="form-error" role="alert">
          {state.error}
        </p>
      ) : null}
    </main>
  );
}
