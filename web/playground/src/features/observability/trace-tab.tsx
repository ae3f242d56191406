import { PendingState } from '../../../../shared/ui/pending-state';
import { Fragment, useMemo, useState } from 'react';
import { formatDateTime, formatDuration, formatTime, prettyJson } from '../../../../shared/ui/format';
import { TraceBar, TraceTicks } from '../../../../shared/ui/trace-bar';
import { useAsync, useReloadOn } from '../../../../shared/ui/use-async';
import type { PlaygroundApi, Span } from '../../api/playground-api';
import { buildWaterfall, KEY_ATTRIBUTES, type WaterfallRow } from './waterfall-model';

const INDENT_PX = 12;

function attributeValue(value: unknown): string {
  return typeof value === 'string' ? value : prettyJson(value);
}

/** Where the time of each turn went: one waterfall per trace; a span's attributes open under it. */
export function TraceTab({
  api,
  sessionId,
  refreshKey,
}: {
  api: PlaygroundApi;
  sessionId: string;
  refreshKey: number;
}) {
  const traces = useAsync(sessionId, (signal) => api.traces(sessionId, signal));
  const { reload } = traces;
  const [selected, setSelected] = useState<string | null>(null);

  useReloadOn(refreshKey, reload);

  const groups = useMemo(() => buildWaterfall(traces.data ?? []), [traces.data]);

  if (traces.data === undefined) return <PendingState error={traces.error} what="traces" onRetry={reload} />;
  if (groups.length === 0) {
    return <p className="panel-note">No traces yet. Send a message and its spans appear here.</p>;
  }

  return (
    <div className="waterfall">
      {groups.map((group) => (
        <div
          key={group.traceId}
          className="trace-group"
          role="group"
          aria-label={`${group.title} at ${formatTime(group.startedAt)}`}
        >
          <header className="trace-group__header">
            <h3 className="trace-group__title">{group.title}</h3>
            <p className="trace-group__facts">
              <time dateTime={new Date(group.startedAt).toISOString()} title={formatDateTime(group.startedAt)}>
                {formatTime(group.startedAt)}
              </time>
              <span>{formatDuration(group.durationMs)}</span>
              <span>
                {group.rows.length} {group.rows.length === 1 ? 'span' : 'spans'}
              </span>
              {group.errorCount > 0 ? (
                <span className="badge badge--danger">
                  {group.errorCount} {group.errorCount === 1 ? 'error' : 'errors'}
                </span>
              ) : null}
            </p>
          </header>
          <div className="trace-axis" aria-hidden="true">
            <span />
            <TraceTicks durationMs={group.durationMs} />
            <span />
          </div>
          <ul className="trace-rows">
            {group.rows.map((row) => {
              const isSelected = selected === row.span.span_id;
              return (
                <Fragment key={row.span.span_id}>
                  <li>
                    <SpanRow
                      row={row}
                      selected={isSelected}
                      onToggle={() => setSelected(isSelected ? null : row.span.span_id)}
                    />
                  </li>
                  {isSelected ? (
                    <li>
                      <SpanDetails span={row.span} offsetMs={row.offsetMs} />
                    </li>
                  ) : null}
                </Fragment>
              );
            })}
          </ul>
        </div>
      ))}
    </div>
  );
}

function SpanRow({ row, selected, onToggle }: { row: WaterfallRow; selected: boolean; onToggle: () => void }) {
  const { span } = row;
  const error = span.status === 'error';
  return (
    <button
      type="button"
      className={`span-row${error ? ' span-row--error' : ''}`}
      aria-expanded={selected}
      onClick={onToggle}
    >
      <span className="span-row__label" style={{ paddingInlineStart: `${row.depth * INDENT_PX}px` }}>
        <span className="span-row__name">{span.operation}</span>
        {error ? <span className="badge badge--danger span-row__status">error</span> : null}
      </span>
      <TraceBar start={row.left} length={row.width} tone={error ? 'error' : undefined} />
      <span className="span-row__ms">{formatDuration(span.duration_ms)}</span>
    </button>
  );
}

function SpanDetails({ span, offsetMs }: { span: Span; offsetMs: number }) {
  const attributes = span.attributes ?? {};
  const known = KEY_ATTRIBUTES.filter(([key]) => attributes[key] !== undefined);
  const knownKeys = new Set(known.map(([key]) => key));
  const rest = Object.keys(attributes)
    .filter((key) => !knownKeys.has(key))
    .sort();

  return (
    <div className="span-details" role="group" aria-label={`Span ${span.operation}`}>
      <dl className="span-details__summary">
        <div>
          <dt>Status</dt>
          <dd>
            <span className={`badge ${span.status === 'error' ? 'badge--danger' : 'badge--success'}`}>
              {span.status}
            </span>
          </dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{formatDuration(span.duration_ms)}</dd>
        </div>
        <div>
          <dt>Starts at</dt>
          <dd>+{formatDuration(offsetMs)}</dd>
        </div>
        {known.map(([key, label]) => (
          <div key={key}>
            <dt title={key}>{label}</dt>
            <dd>{attributeValue(attributes[key])}</dd>
          </div>
        ))}
      </dl>
      <dl className="span-details__attributes">
        {rest.map((key) => (
          <div key={key}>
            <dt>{key}</dt>
            <dd>{attributeValue(attributes[key])}</dd>
          </div>
        ))}
        <div>
          <dt>span_id</dt>
          <dd>{span.span_id}</dd>
        </div>
        <div>
          <dt>trace_id</dt>
          <dd>{span.trace_id}</dd>
        </div>
      </dl>
    </div>
  );
}
