import { useId, useState } from 'react';
import { describeError } from '../api/api-error';
import { prettyJson } from '../ui/format';
import { RefreshIcon } from '../ui/icons';
import { PendingState } from '../ui/pending-state';
import { useAsync } from '../ui/use-async';
import type { Connection, ConnectionTool, ConnectionsApi } from './connections-api';
import { diffText, type DiffPart } from './text-diff';

export interface ConnectionToolsProps {
  api: ConnectionsApi;
  connection: Connection;
  id: string;
  /** Says something in the page's status region. */
  onStatus: (text: string, tone?: 'success' | 'error') => void;
}

/**
 * MCP's reading of the hints: a tool that does not say it is read-only may write, and one that writes is destructive
 * unless it says otherwise.
 */
export function isReadOnly(tool: ConnectionTool): boolean {
  return tool.annotations.readOnlyHint === true;
}

export function isDestructive(tool: ConnectionTool): boolean {
  return !isReadOnly(tool) && tool.annotations.destructiveHint !== false;
}

/** The connection's tools as the agent sees them, with their hints, and the changed ones waiting for approval. */
export function ConnectionTools({ api, connection, id, onStatus }: ConnectionToolsProps) {
  const tools = useAsync(`tools:${connection.id}`, (signal) => api.tools(connection.id, signal));
  const [approved, setApproved] = useState<Map<string, ConnectionTool>>(new Map());
  const headingId = useId();
  const list = tools.data?.map((tool) => approved.get(tool.upstream_name) ?? tool);
  const held = list?.filter((tool) => tool.status === 'held').length ?? 0;

  return (
    <section id={id} className="conn-tools" aria-labelledby={headingId}>
      <div className="conn-tools__top">
        <h4 id={headingId} className="conn-tools__heading">
          Tools{list ? <span className="badge">{list.length}</span> : null}
          {held > 0 ? <span className="badge badge--warning">{held} held</span> : null}
        </h4>
        <button
          type="button"
          className="icon-button"
          aria-label={`Reload the tools of ${connection.name}`}
          title="Reload"
          disabled={tools.loading}
          onClick={() => {
            setApproved(new Map());
            tools.reload();
          }}
        >
          <RefreshIcon />
        </button>
      </div>
      {list === undefined ? (
        <PendingState error={tools.error} what="the tools" onRetry={tools.reload} />
      ) : list.length === 0 ? (
        <p className="panel-note">The server offers no tools.</p>
      ) : (
        <ul className="conn-tools__list">
          {list.map((tool) => (
            <ToolRow
              key={tool.upstream_name}
              api={api}
              connection={connection}
              tool={tool}
              onApproved={(next) => {
                setApproved((map) => new Map(map).set(next.upstream_name, next));
                onStatus(`Approved the new definition of ${next.name}.`, 'success');
              }}
            />
          ))}
        </ul>
      )}
      {tools.error !== undefined && list !== undefined ? (
        <p className="form-error" role="alert">
          Could not reload the tools: {describeError(tools.error)}
        </p>
      ) : null}
    </section>
  );
}

function ToolRow({
  api,
  connection,
  tool,
  onApproved,
}: {
  api: ConnectionsApi;
  connection: Connection;
  tool: ConnectionTool;
  onApproved: (tool: ConnectionTool) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const held = tool.status === 'held';
  /** A held tool the upstream changed; one held without a change is new since the connection's tools were pinned. */
  const changed = held ? (tool.changed ?? null) : null;
  const description = tool.description ? <p className="conn-tool__description">{tool.description}</p> : null;
  const schema = (
    <details className="conn-tool__schema">
      <summary>Input schema</summary>
      <pre className="code-block">{prettyJson(tool.input_schema)}</pre>
    </details>
  );

  async function approve() {
    setBusy(true);
    setError(null);
    try {
      onApproved(await api.approveTool(connection.id, tool.upstream_name));
    } catch (failure) {
      setError(describeError(failure));
    } finally {
      setBusy(false);
    }
  }

  return (
    <li className="conn-tool" data-status={tool.status}>
      <div className="conn-tool__head">
        <code className="conn-tool__name">{tool.name}</code>
        {tool.title ? <span className="conn-tool__title">{tool.title}</span> : null}
        <span className="conn-tool__badges">
          {isReadOnly(tool) ? <span className="badge badge--success">Read-only</span> : null}
          {isDestructive(tool) ? <span className="badge badge--danger">Destructive</span> : null}
          {tool.asks_first ? <span className="badge badge--warning">Asks first</span> : null}
          {held ? <span className="badge badge--warning">{changed ? 'Held: changed' : 'Held: new'}</span> : null}
        </span>
      </div>
      {held ? (
        <div className="conn-tool__held">
          <p className="conn-tool__held-note">
            {changed
              ? 'The server changed this tool since it was approved. Agents keep away from it until someone who can ' +
                'edit the connection approves the new definition.'
              : 'The server added this tool after the others were approved. Agents keep away from it until someone ' +
                'who can edit the connection approves it.'}
          </p>
          {changed ? (
            <>
              <DiffBlock label="Description" before={tool.description} after={changed.description} by="words" />
              <DiffBlock
                label="Input schema"
                before={prettyJson(tool.input_schema)}
                after={prettyJson(changed.input_schema)}
                by="lines"
              />
            </>
          ) : (
            <>
              {description}
              {schema}
            </>
          )}
          {error ? (
            <p className="form-error" role="alert">
              {error}
            </p>
          ) : null}
          {connection.can_edit ? (
            <div>
              <button
                type="button"
                className="button button--primary button--small"
                disabled={busy}
                onClick={() => void approve()}
              >
                {busy ? <span className="spinner" aria-hidden="true" /> : null}
                Approve
                <span className="visually-hidden">
                  {changed ? ` the new definition of ${tool.name}` : ` ${tool.name}`}
                </span>
              </button>
            </div>
          ) : (
            <p className="conn-form__hint">
              {connection.scope === 'shared' ? 'An administrator' : 'Its owner'} can approve it.
            </p>
          )}
        </div>
      ) : (
        <>
          {description}
          {schema}
        </>
      )}
    </li>
  );
}

/** The approved and the new text side by side: what went is struck out on the left, what came is marked on the right. */
function DiffBlock({
  label,
  before,
  after,
  by,
}: {
  label: string;
  before: string;
  after: string;
  by: 'words' | 'lines';
}) {
  const parts = diffText(before, after, by);
  const changed = parts.some((p) => p.kind !== 'same');
  const side = (keep: DiffPart['kind']) =>
    parts
      .filter((p) => p.kind === 'same' || p.kind === keep)
      .map((p, i) => {
        if (p.kind === 'same') return <span key={i}>{p.text}</span>;
        // The spaces around a changed run of words stay unmarked.
        const [, lead = '', core = '', trail = ''] = /^(\s*)([\s\S]*?)(\s*)$/.exec(p.text) ?? [];
        const mark =
          p.kind === 'removed' ? (
            <del className="conn-diff__del">{core}</del>
          ) : (
            <ins className="conn-diff__ins">{core}</ins>
          );
        return (
          <span key={i}>
            {lead}
            {mark}
            {trail}
          </span>
        );
      });
  if (!changed) {
    return (
      <p className="conn-diff__same">
        {label}: <span>unchanged</span>
      </p>
    );
  }
  return (
    <div className="conn-diff" role="group" aria-label={`${label}, approved and new`}>
      <div className="conn-diff__side">
        <p className="conn-diff__label">{label} · approved</p>
        <pre className={by === 'lines' ? 'conn-diff__text conn-diff__text--code' : 'conn-diff__text'}>
          {side('removed')}
        </pre>
      </div>
      <div className="conn-diff__side">
        <p className="conn-diff__label">{label} · new</p>
        <pre className={by === 'lines' ? 'conn-diff__text conn-diff__text--code' : 'conn-diff__text'}>
          {side('added')}
        </pre>
      </div>
    </div>
  );
}
