import { useId, useState } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import { formatDateTime, formatTime, prettyJson } from '../../../../shared/ui/format';
import { useAsync, useReloadOn } from '../../../../shared/ui/use-async';
import { LOG_LEVELS, type LogLevel, type PlaygroundApi } from '../../api/playground-api';

const LEVEL_TONE: Record<LogLevel, string> = {
  DEBUG: '',
  INFO: 'badge--info',
  WARN: 'badge--warning',
  ERROR: 'badge--danger',
};

/** The session's log entries at or above a chosen level. */
export function LogsTab({ api, sessionId, refreshKey }: { api: PlaygroundApi; sessionId: string; refreshKey: number }) {
  const [level, setLevel] = useState<LogLevel>('INFO');
  const logs = useAsync(`${sessionId}:${level}`, (signal) => api.logs(sessionId, level, signal));
  const { reload } = logs;
  const selectId = useId();

  useReloadOn(refreshKey, reload);

  return (
    <div className="logs">
      <div className="logs__toolbar">
        <label htmlFor={selectId} className="field-label">
          Minimum level
        </label>
        <select
          id={selectId}
          className="input logs__level"
          value={level}
          onChange={(event) => setLevel(event.target.value as LogLevel)}
        >
          {LOG_LEVELS.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
      </div>

      {logs.error !== undefined && logs.data === undefined ? (
        <div className="panel-note" role="alert">
          <p>{describeError(logs.error)}</p>
          <button type="button" className="button button--small" onClick={reload}>
            Try again
          </button>
        </div>
      ) : logs.data === undefined ? (
        <p className="panel-note">
          <span className="spinner" aria-hidden="true" /> Loading logs…
        </p>
      ) : logs.data.length === 0 ? (
        <p className="panel-note">No log entries at {level} or above.</p>
      ) : (
        <ol className="log-list">
          {logs.data.map((entry, index) => {
            const attributes = entry.attributes ?? {};
            const hasAttributes = Object.keys(attributes).length > 0;
            return (
              <li key={`${entry.timestamp}-${index}`} className={`log-entry log-entry--${entry.level.toLowerCase()}`}>
                <div className="log-entry__line">
                  <time dateTime={entry.timestamp} title={formatDateTime(entry.timestamp)} className="log-entry__time">
                    {formatTime(entry.timestamp)}
                  </time>
                  <span className={`badge ${LEVEL_TONE[entry.level] ?? ''} log-entry__level`}>{entry.level}</span>
                  <span className="log-entry__message">{entry.message}</span>
                </div>
                {hasAttributes ? (
                  <details className="log-entry__attributes">
                    <summary>Attributes</summary>
                    <pre className="code-block">{prettyJson(attributes)}</pre>
                  </details>
                ) : null}
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
