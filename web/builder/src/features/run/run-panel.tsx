import { useId, useState, type FormEvent } from 'react';
import { formatDateTime, formatDuration, formatRelative, prettyJson } from '../../../../shared/ui/format';
import { RefreshIcon, StopIcon, WrenchIcon } from '../../../../shared/ui/icons';
import { PendingState } from '../../../../shared/ui/pending-state';
import { TraceBar, TraceTicks } from '../../../../shared/ui/trace-bar';
import { useAsync } from '../../../../shared/ui/use-async';
import type { BuilderApi, Run, RunStatus } from '../../api/builder-api';
import { CheckIcon, NodeTypeIcon, PlayIcon } from '../../ui/icons';
import type { RunControl, RunDetails } from './use-run';
import {
  sliceOf,
  traceWindow,
  type RunView,
  type TimelineItem,
  type ToolStep,
  type TraceSlice,
  type TraceWindow,
} from './run-model';

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
          details={run.details}
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

/**
 * How long something took. Measured in the browser (a live run's events may carry no time of their own), events
 * that arrive together are less than a millisecond apart.
 */
const durationText = (ms: number) => (ms < 1 ? '< 1 ms' : formatDuration(ms));

/** "+0.12 s": how far into the run something began. */
const offsetText = (slice: TraceSlice) => `+${slice.offsetMs < 1 ? '0 ms' : formatDuration(slice.offsetMs)}`;

/** A tool's result: the text of MCP content blocks, or the value as JSON. */
function resultText(result: unknown): string {
  if (Array.isArray(result) && result.every((b) => typeof b === 'object' && b !== null && 'text' in b)) {
    return result.map((b: { text: unknown }) => prettyJson(b.text)).join('\n\n');
  }
  return prettyJson(result);
}

function ToolCallView({ tool, frame, lastAt }: { tool: ToolStep; frame: TraceWindow | null; lastAt: number | null }) {
  const state = tool.result === undefined ? 'running' : tool.isError ? 'error' : 'done';
  const slice = sliceOf(frame, tool.startedAt, tool.endedAt, lastAt);
  return (
    <details className="run-tool" data-state={state}>
      <summary>
        <WrenchIcon />
        <span className="visually-hidden">Tool call </span>
        <code className="run-tool__name">{tool.name}</code>
        <span className="run-tool__state">
          {state === 'running' ? 'calling…' : state === 'error' ? 'failed' : 'done'}
        </span>
        {slice && !slice.open ? (
          <span className="run-time" title={`Called ${offsetText(slice)} into the run`}>
            <span className="visually-hidden">, took </span>
            {durationText(slice.durationMs)}
          </span>
        ) : null}
      </summary>
      <div className="run-tool__body">
        <p className="run-tool__label">Arguments</p>
        <pre className="code-block">{prettyJson(tool.args) || '{}'}</pre>
        {tool.result !== undefined ? (
          <>
            <p className="run-tool__label">{tool.isError ? 'Error' : 'Result'}</p>
            <pre className={tool.isError ? 'code-block code-block--error' : 'code-block'}>
              {resultText(tool.result) || '(empty)'}
            </pre>
          </>
        ) : null}
      </div>
    </details>
  );
}

function TimelineEntry({
  item,
  frame,
  lastAt,
  describeNode,
  onSelectNode,
}: {
  item: TimelineItem;
  frame: TraceWindow | null;
  lastAt: number | null;
  describeNode: RunPanelProps['describeNode'];
  onSelectNode: (id: string) => void;
}) {
  const id = useId();
  const node = describeNode(item.nodeId);
  const type = item.nodeType || node?.type || '';
  const slice = sliceOf(frame, item.startedAt, item.endedAt, lastAt);
  const firstToken = sliceOf(frame, item.startedAt, item.firstTokenAt, null);
  return (
    <li className="run-item" data-status={item.status} data-type={type} role="group" aria-labelledby={`${id}-name`}>
      <div className="run-item__head">
        <span className="run-item__icon">
          <NodeTypeIcon type={type} />
        </span>
        <button
          type="button"
          id={`${id}-name`}
          className="link-button run-item__name"
          onClick={() => onSelectNode(item.nodeId)}
        >
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
        {slice && !slice.open ? (
          <span className="run-time">
            <span className="visually-hidden">in </span>
            {durationText(slice.durationMs)}
          </span>
        ) : null}
      </div>
      {slice ? (
        <div className="run-item__timing">
          <TraceBar start={slice.start} length={slice.length} tone={slice.open ? 'open' : undefined} />
          <span className="run-item__facts">
            <span>started {offsetText(slice)}</span>
            {firstToken && item.firstTokenAt !== null ? (
              <span>first token after {durationText(firstToken.durationMs)}</span>
            ) : null}
          </span>
        </div>
      ) : null}
      {item.tools.map((tool, index) => (
        <ToolCallView key={index} tool={tool} frame={frame} lastAt={lastAt} />
      ))}
      {item.text ? (
        <p className="run-item__text">
          <span className="visually-hidden">Streamed text: </span>
          {item.text}
        </p>
      ) : null}
      {item.answer !== undefined ? (
        <p className="run-item__answer">
          <span className="run-item__label">Answer</span>
          {item.answer}
        </p>
      ) : null}
    </li>
  );
}

/** What the list of past runs could tell about a run shown from it, beyond its summary. */
function DetailsNote({ details }: { details: RunDetails }) {
  if (details === 'loading') {
    return (
      <p className="panel-note run__details" role="status">
        <span>
          <span className="spinner spinner--tiny" aria-hidden="true" /> Loading the run’s details…
        </span>
      </p>
    );
  }
  if (details === 'unavailable') {
    return (
      <p className="notice notice--small run__details" role="status">
        This run’s details are not available: only the nodes it went through and its outcome were kept.
      </p>
    );
  }
  if (typeof details === 'object') {
    return (
      <p className="form-error run__details" role="alert">
        Could not load the run’s details: {details.error}
      </p>
    );
  }
  return null;
}

/** A run as it goes or went: its steps with timings, text and tool calls, its question, its output. */
export function RunTimeline({
  view,
  details,
  describeNode,
  onSelectNode,
  onAnswer,
  busy,
  focusQuestion = true,
}: {
  view: RunView;
  details: RunDetails;
  describeNode: RunPanelProps['describeNode'];
  onSelectNode: (id: string) => void;
  onAnswer: (answer: string) => void;
  busy: boolean;
  /** Whether the answer box takes the focus when the run asks (not inside another app's page). */
  focusQuestion?: boolean;
}) {
  const [answer, setAnswer] = useState('');
  const id = useId();
  const waiting = view.status === 'waiting' && view.runId !== null;
  const frame = traceWindow(view);
  const toolCalls = view.items.reduce((n, item) => n + item.tools.length, 0);

  return (
    <section className="run__current" aria-labelledby={`${id}-heading`}>
      <div className="run__current-head">
        <h3 id={`${id}-heading`} className="props__subtitle">
          {view.runId ? 'This run' : 'Starting a run'}
        </h3>
        <StatusBadge status={view.status} />
      </div>
      {view.input ? <p className="run__input">“{view.input}”</p> : null}
      <DetailsNote details={details} />
      {frame ? (
        <div className="run-trace__head">
          <p className="run-trace__facts">
            <span>
              {view.endedAt !== null ? 'Took ' : 'So far '}
              <span className="run-time">{durationText(frame.durationMs)}</span>
            </span>
            <span>
              {view.items.length} {view.items.length === 1 ? 'step' : 'steps'}
            </span>
            {toolCalls > 0 ? (
              <span>
                {toolCalls} {toolCalls === 1 ? 'tool call' : 'tool calls'}
              </span>
            ) : null}
          </p>
          <TraceTicks durationMs={frame.durationMs} />
        </div>
      ) : null}
      <ol className="run-log" role="log" aria-live="polite" aria-relevant="additions text" aria-label="Run events">
        {view.items.map((item) => (
          <TimelineEntry
            key={item.key}
            item={item}
            frame={frame}
            lastAt={view.lastAt}
            describeNode={describeNode}
            onSelectNode={onSelectNode}
          />
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
              autoFocus={focusQuestion}
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
