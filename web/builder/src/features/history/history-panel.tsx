import { useId, useState } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import { ConfirmDialog } from '../../../../shared/ui/confirm-dialog';
import { formatDateTime, formatRelative } from '../../../../shared/ui/format';
import { RefreshIcon } from '../../../../shared/ui/icons';
import { PendingState } from '../../../../shared/ui/pending-state';
import { useAsync } from '../../../../shared/ui/use-async';
import type { BuilderApi, VersionSummary, Workflow } from '../../api/builder-api';
import { Modal } from '../../ui/modal';
import { PreviewCanvas } from '../editor/preview-canvas';
import { DiffView } from './diff-view';

export interface HistoryPanelProps {
  api: BuilderApi;
  workflowId: string | null;
  /** The saved version the editor holds; the list reloads when it changes. */
  currentVersion: number | null;
  /** Restoring drops unsaved changes, and the confirmation says so. */
  dirty: boolean;
  onRestored: (workflow: Workflow) => void;
}

function sourceText(v: VersionSummary): string {
  if (v.source === 'create') return 'Created';
  if (v.source === 'rollback') return v.restored_from !== null ? `Restored from v${v.restored_from}` : 'Restored';
  return 'Saved';
}

/** One end of the comparison: a labelled choice among the saved versions. */
function VersionSelect({
  id,
  label,
  versions,
  value,
  onChange,
}: {
  id: string;
  label: string;
  versions: readonly VersionSummary[];
  value: number | null;
  onChange: (version: number) => void;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        className="input input--small"
        value={value ?? ''}
        onChange={(event) => onChange(Number(event.target.value))}
      >
        {versions.map((v) => (
          <option key={v.version} value={v.version}>
            v{v.version}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Every saved version: view one, compare two side by side, restore one as the newest version. */
export function HistoryPanel({ api, workflowId, currentVersion, dirty, onRestored }: HistoryPanelProps) {
  const versions = useAsync(workflowId ? `versions:${workflowId}:${currentVersion ?? 0}` : null, (signal) =>
    api.versions(workflowId!, signal),
  );
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const [comparing, setComparing] = useState<{ from: number; to: number } | null>(null);
  const [viewing, setViewing] = useState<number | null>(null);
  const [restoring, setRestoring] = useState<number | null>(null);
  const [restoreBusy, setRestoreBusy] = useState(false);
  const [restoreError, setRestoreError] = useState<string | null>(null);
  const id = useId();

  if (!workflowId) {
    return <p className="panel-note">Versions appear here once the workflow is saved.</p>;
  }
  if (versions.data === undefined) {
    return <PendingState error={versions.error} what="versions" onRetry={versions.reload} />;
  }

  const list = versions.data;
  const newest = list[0]?.version ?? null;
  const older = list[1]?.version ?? newest;
  const fromValue = from !== null && list.some((v) => v.version === from) ? from : older;
  const toValue = to !== null && list.some((v) => v.version === to) ? to : newest;

  async function restore() {
    if (restoring === null || !workflowId) return;
    setRestoreBusy(true);
    setRestoreError(null);
    try {
      const workflow = await api.rollback(workflowId, restoring);
      setRestoring(null);
      setViewing(null);
      onRestored(workflow);
    } catch (failure) {
      setRestoreError(describeError(failure));
    } finally {
      setRestoreBusy(false);
    }
  }

  return (
    <div className="history">
      <form
        className="compare"
        aria-label="Compare two versions"
        onSubmit={(event) => {
          event.preventDefault();
          if (fromValue !== null && toValue !== null) setComparing({ from: fromValue, to: toValue });
        }}
      >
        <VersionSelect id={`${id}-from`} label="From" versions={list} value={fromValue} onChange={setFrom} />
        <VersionSelect id={`${id}-to`} label="To" versions={list} value={toValue} onChange={setTo} />
        <button type="submit" className="button button--small" disabled={list.length < 2 || fromValue === toValue}>
          Compare
        </button>
      </form>

      <div className="run__current-head">
        <h3 className="props__subtitle">Versions</h3>
        <button
          type="button"
          className="icon-button"
          aria-label="Reload versions"
          title="Reload"
          onClick={versions.reload}
        >
          <RefreshIcon />
        </button>
      </div>
      <ol className="versions" aria-label="Versions">
        {list.map((v) => {
          const current = v.version === currentVersion;
          return (
            <li key={v.version} className="version" data-current={current ? 'true' : undefined}>
              <div className="version__main">
                <span className="version__number">v{v.version}</span>
                {current ? <span className="badge badge--accent">current</span> : null}
                <span className="version__source">{sourceText(v)}</span>
              </div>
              <div className="version__meta">
                <time dateTime={v.created_at} title={formatDateTime(v.created_at)}>
                  {formatRelative(v.created_at)}
                </time>
                <span>
                  {v.node_count} nodes · {v.edge_count} edges
                </span>
              </div>
              <div className="version__actions">
                <button
                  type="button"
                  className="button button--small"
                  aria-label={`View version ${v.version}`}
                  onClick={() => setViewing(v.version)}
                >
                  View
                </button>
                {!current ? (
                  <button
                    type="button"
                    className="button button--small"
                    aria-label={`Restore version ${v.version}`}
                    onClick={() => {
                      setRestoreError(null);
                      setRestoring(v.version);
                    }}
                  >
                    Restore
                  </button>
                ) : null}
              </div>
            </li>
          );
        })}
      </ol>

      {comparing ? (
        <CompareDialog
          api={api}
          workflowId={workflowId}
          from={comparing.from}
          to={comparing.to}
          onClose={() => setComparing(null)}
        />
      ) : null}
      {viewing !== null ? (
        <VersionDialog
          api={api}
          workflowId={workflowId}
          version={viewing}
          current={currentVersion}
          onCompare={() => {
            if (currentVersion !== null)
              setComparing({ from: Math.min(viewing, currentVersion), to: Math.max(viewing, currentVersion) });
            setViewing(null);
          }}
          onRestore={() => {
            setRestoreError(null);
            setRestoring(viewing);
          }}
          onClose={() => setViewing(null)}
        />
      ) : null}

      <ConfirmDialog
        open={restoring !== null}
        title={`Restore version ${restoring ?? ''}?`}
        confirmLabel="Restore"
        busy={restoreBusy}
        error={restoreError}
        onConfirm={() => void restore()}
        onCancel={() => setRestoring(null)}
      >
        <p>
          Version {restoring} becomes the newest version (v{(newest ?? 0) + 1}); the versions after it stay in the
          history.
          {dirty ? ' Your unsaved changes will be lost.' : ''}
        </p>
      </ConfirmDialog>
    </div>
  );
}

function CompareDialog({
  api,
  workflowId,
  from,
  to,
  onClose,
}: {
  api: BuilderApi;
  workflowId: string;
  from: number;
  to: number;
  onClose: () => void;
}) {
  const [a, b] = from <= to ? [from, to] : [to, from];
  const diff = useAsync(`diff:${workflowId}:${a}:${b}`, (signal) => api.diff(workflowId, a, b, signal));
  return (
    <Modal
      title={`Changes from version ${a} to version ${b}`}
      wide
      onClose={onClose}
      actions={
        <button type="button" className="button" onClick={onClose}>
          Close
        </button>
      }
    >
      {diff.data ? (
        <DiffView diff={diff.data} />
      ) : (
        <PendingState error={diff.error} what="the differences" onRetry={diff.reload} />
      )}
    </Modal>
  );
}

function VersionDialog({
  api,
  workflowId,
  version,
  current,
  onCompare,
  onRestore,
  onClose,
}: {
  api: BuilderApi;
  workflowId: string;
  version: number;
  current: number | null;
  onCompare: () => void;
  onRestore: () => void;
  onClose: () => void;
}) {
  const detail = useAsync(`version:${workflowId}:${version}`, (signal) => api.version(workflowId, version, signal));
  const isCurrent = version === current;
  return (
    <Modal
      title={`Version ${version}${isCurrent ? ' (current)' : ''}`}
      wide
      onClose={onClose}
      actions={
        <>
          <button type="button" className="button" onClick={onClose}>
            Close
          </button>
          {!isCurrent && current !== null ? (
            <button type="button" className="button" onClick={onCompare}>
              Compare with v{current}
            </button>
          ) : null}
          {!isCurrent ? (
            <button type="button" className="button button--primary" onClick={onRestore}>
              Restore this version
            </button>
          ) : null}
        </>
      }
    >
      {detail.data ? (
        <div className="version-view">
          <dl className="version-view__facts">
            <div>
              <dt>Name</dt>
              <dd>{detail.data.workflow.name}</dd>
            </div>
            <div>
              <dt>Saved</dt>
              <dd>{formatDateTime(detail.data.created_at)}</dd>
            </div>
            <div>
              <dt>Nodes</dt>
              <dd>{detail.data.node_count}</dd>
            </div>
            <div>
              <dt>Edges</dt>
              <dd>{detail.data.edge_count}</dd>
            </div>
          </dl>
          <PreviewCanvas definition={detail.data.workflow} label={`The canvas of version ${version}`} />
        </div>
      ) : (
        <PendingState error={detail.error} what={`version ${version}`} onRetry={detail.reload} />
      )}
    </Modal>
  );
}
