import { useId, useState, type FormEvent } from 'react';
import { formatDateTime, formatRelative, prettyJson } from '../../../../shared/ui/format';
import { RefreshIcon, StopIcon, WrenchIcon } from '../../../../shared/ui/icons';
import { PendingState } from '../../../../shared/ui/pending-state';
import { useAsync } from '../../../../shared/ui/use-async';
import type { BuilderApi, Run, RunStatus } from '../../api/builder-api';
import { CheckIcon, NodeTypeIcon, PlayIcon } from '../../ui/icons';
import type { RunControl } from './use-run';
import type { RunView, TimelineItem, ToolStep } from './run-model';

export interface RunPanelProps {
  api: BuilderApi;
  run: RunControl;
  workflowId: string | null;
  /** The version runs use: the saved one. */
  savedVersion: number | null;
  dirty: boolean;
  /** A node's label and type, by id, as the canvas shows it. */
  describeNode: (id: string) => { name: string; type: string } | undefined;
  onSelectNode: (id: string) => void;
}

const STATUS_TEXT: Record<RunView['status'], string> = {
  idle: 'Not run yet',
  starting: 'Starting…',
  running: 'Running',
  waiting: 'Waiting for an answer',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Stopped',
};

const STATUS_BADGE: Record<RunView['status'], string> = {
  idle: 'badge',
  starting: 'badge badge--info',
  running: 'badge badge--info',
  waiting: 'badge badge--warning',
  completed: 'badge badge--success',
  failed: 'badge badge--danger',
  cancelled: 'badge',
};

export function StatusBadge({ status }: { status: RunView['status'] | RunStatus }) {
  return (
    <span className={STATUS_BADGE[status]}>
      {status === 'running' || status === 'starting' ? (
        <span className="spinner spinner--tiny" aria-hidden="true" />
      ) : null}
      {STATUS_TEXT[status]}
    </span>
  );
}

/** Run the saved workflow with an input and watch it: nodes, tokens, tool calls, questions, the output. */
export function RunPanel({ api, run, workflowId, savedVersion, dirty, describeNode, onSelectNode }: RunPanelProps) {
  const [input, setInput] = useState('');
  const id = useId();
  const { view, streaming } = run;
  const busy = streaming || view.status === 'starting';

  if (!workflowId) {
    return (
      <div className="run">
        <p className="panel-note">Save the workflow first: runs use the saved version.</p>
      </div>
    );
  }

  function submit(event: FormEvent) {
    event.preventDefault();
    if (busy || !input.trim()) return;
    run.start(input.trim());
  }

  return (
    <div className="run">
      {dirty ? (
        <p className="notice notice--small">
          Runs use the saved version{savedVersion !== null ? ` (v${savedVersion})` : ''}. Save to run your changes.
        </p>
      ) : null}
      <form className="run__form" onSubmit={submit}>
        <div className="field">
          <label htmlFor={`${id}-input`}>Input</label>
          <textarea
            id={`${id}-input`}
            className="input textarea"
            rows={3}
            data-native-undo
            value={input}
            placeholder="What should the workflow work on?"
            onChange={(event) => setInput(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && (event.metaKey || event.ctrlKey)) submit(event);
            }}
          />
        </div>
        <div className="run__buttons">
          {busy ? (
            <button type="button" className="button" onClick={run.stop}>
              <StopIcon />
              Stop
            </button>
          ) : (
            <button type="submit" className="button button--primary" disabled={!input.trim()}>
              <PlayIcon />
              Run
            </button>
          )}
        </div>
      </form>

      {view.status !== 'idle' ? (
        <RunTimeline
          view={view}
          describeNode={describeNode}
          onSelectNode={onSelectNode}
          onAnswer={run.resume}
          busy={busy}
        />
      ) : null}

      <PastRuns api={api} workflowId={workflowId} refresh={run.settled} currentRunId={view.runId} onShow={run.show} />
    </div>
  );
}

function ToolCallView({ tool }: { tool: ToolStep }) {
  const state = tool.result === undefined ? 'running' : tool.isError ? 'error' : 'done';
  return (
    <details className="run-tool" data-state={state}>
      <summary>
        <WrenchIcon />
        <code>{tool.name}</code>
        <span className="run-tool__state">
          {state === 'running' ? 'calling…' : state === 'error' ? 'failed' : 'done'}
        </span>
      </summary>
      <div className="run-tool__body">
        <p className="run-tool__label">Arguments</p>
        <pre className="code-block">{prettyJson(tool.args)}</pre>
        {tool.result !== undefined ? (
          <>
            <p className="run-tool__label">Result</p>
            <pre className={tool.isError ? 'code-block code-block--error' : 'code-block'}>
              {prettyJson(tool.result)}
            </pre>
          </>
        ) : null}
      </div>
    </details>
  );
}

function TimelineEntry({
  item,
  describeNode,
  onSelectNode,
}: {
  item: TimelineItem;
  describeNode: RunPanelProps['describeNode'];
  onSelectNode: (id: string) => void;
}) {
  const node = describeNode(item.nodeId);
  const type = item.nodeType || node?.type || '';
  return (
    <li className="run-item" data-status={item.status} data-type={type}>
      <div className="run-item__head">
        <span className="run-item__icon">
          <NodeTypeIcon type={type} />
        </span>
        <button type="button" className="link-button run-item__name" onClick={() => onSelectNode(item.nodeId)}>
          {node?.name ?? item.nodeId}
        </button>
        <span className="run-item__state">
          {item.status === 'running' ? (
            <>
              <span className="spinner spinner--tiny" aria-hidden="true" /> running
            </>
          ) : item.status === 'waiting' ? (
            'waiting for an answer'
          ) : (
            <>
              <CheckIcon /> finished
            </>
          )}
        </span>
      </div>
      {item.tools.map((tool, index) => (
        <ToolCallView key={index} tool={tool} />
      ))}
      {item.text ? <p className="run-item__text">{item.text}</p> : null}
      {item.answer !== undefined ? (
        <p className="run-item__answer">
          <span className="run-item__label">Answer</span>
          {item.answer}
        </p>
      ) : null}
    </li>
  );
}

function RunTimeline({
  view,
  describeNode,
  onSelectNode,
  onAnswer,
  busy,
}: {
  view: RunView;
  describeNode: RunPanelProps['describeNode'];
  onSelectNode: (id: string) => void;
  onAnswer: (answer: string) => void;
  busy: boolean;
}) {
  const [answer, setAnswer] = useState('');
  const id = useId();
  const waiting = view.status === 'waiting' && view.runId !== null;

  return (
    <section className="run__current" aria-labelledby={`${id}-heading`}>
      <div className="run__current-head">
        <h3 id={`${id}-heading`} className="props__subtitle">
          {view.runId ? 'This run' : 'Starting a run'}
        </h3>
        <StatusBadge status={view.status} />
      </div>
      {view.input ? <p className="run__input">“{view.input}”</p> : null}
      <ol className="run-log" role="log" aria-live="polite" aria-relevant="additions text" aria-label="Run events">
        {view.items.map((item) => (
          <TimelineEntry key={item.key} item={item} describeNode={describeNode} onSelectNode={onSelectNode} />
        ))}
      </ol>

      {waiting ? (
        <form
          className="interrupt"
          aria-labelledby={`${id}-question`}
          onSubmit={(event) => {
            event.preventDefault();
            if (!answer.trim() || busy) return;
            onAnswer(answer.trim());
            setAnswer('');
          }}
        >
          <p id={`${id}-question`} className="interrupt__question">
            {view.question || 'The workflow is waiting for an answer.'}
          </p>
          <div className="field">
            <label htmlFor={`${id}-answer`}>Your answer</label>
            <textarea
              id={`${id}-answer`}
              className="input textarea"
              rows={2}
              data-native-undo
              value={answer}
              autoFocus
              onChange={(event) => setAnswer(event.target.value)}
            />
          </div>
          <button type="submit" className="button button--primary" disabled={!answer.trim() || busy}>
            Send answer
          </button>
        </form>
      ) : null}

      {view.output !== null && view.status === 'completed' ? (
        <div className="run__output">
          <h4 className="run-tool__label">Output</h4>
          <p className="run__output-text">{view.output}</p>
        </div>
      ) : null}
      {view.error ? (
        <p className="form-error" role="alert">
          {view.error}
        </p>
      ) : null}
    </section>
  );
}

function PastRuns({
  api,
  workflowId,
  refresh,
  currentRunId,
  onShow,
}: {
  api: BuilderApi;
  workflowId: string;
  refresh: number;
  currentRunId: string | null;
  onShow: (run: Run) => void;
}) {
  const runs = useAsync(`runs:${workflowId}:${refresh}`, (signal) => api.runs(workflowId, signal));
  const id = useId();
  return (
    <section className="past-runs" aria-labelledby={`${id}-heading`}>
      <div className="run__current-head">
        <h3 id={`${id}-heading`} className="props__subtitle">
          Past runs
        </h3>
        <button
          type="button"
          className="icon-button"
          aria-label="Reload past runs"
          title="Reload"
          onClick={runs.reload}
        >
          <RefreshIcon />
        </button>
      </div>
      {runs.data === undefined ? (
        <PendingState error={runs.error} what="runs" onRetry={runs.reload} />
      ) : runs.data.length === 0 ? (
        <p className="field-hint">No runs yet.</p>
      ) : (
        <ul className="past-runs__list">
          {runs.data.map((r) => (
            <li key={r.run_id} className="past-run" data-current={r.run_id === currentRunId ? 'true' : undefined}>
              <div className="past-run__main">
                <StatusBadge status={r.status} />
                <span className="past-run__input">{r.input || '(no input)'}</span>
              </div>
              <div className="past-run__meta">
                <time dateTime={r.created_at} title={formatDateTime(r.created_at)}>
                  {formatRelative(r.created_at)}
                </time>
                <span>v{r.version}</span>
                <button
                  type="button"
                  className="button button--small"
                  aria-label={
                    r.status === 'waiting'
                      ? `Answer the run started ${formatRelative(r.created_at)}`
                      : `Show the run started ${formatRelative(r.created_at)}`
                  }
                  onClick={() => onShow(r)}
                >
                  {r.status === 'waiting' ? 'Answer' : 'Show'}
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
