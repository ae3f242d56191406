import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import type { ApiClient } from '../api/api-client';
import { describeError } from '../api/api-error';
import { ConfirmDialog } from '../ui/confirm-dialog';
import { formatDateTime, formatDuration, formatNumber, formatRelative } from '../ui/format';
import { ActivityIcon, PencilIcon, PlugIcon, PlusIcon, RefreshIcon, TrashIcon, WrenchIcon } from '../ui/icons';
import { PendingState } from '../ui/pending-state';
import { useAsync } from '../ui/use-async';
import { ConnectionForm } from './connection-form';
import { ConnectionTools } from './connection-tools';
import { createConnectionsApi, type Connection, type ConnectionsApi, type TestResult } from './connections-api';
import './connections.css';
import { APPROVAL_LABELS, SCOPE_LABELS, TRANSPORT_LABELS } from './labels';
import { type SignInReturn, clearSignInReturn, humanizeCode, readSignInReturn } from './sign-in-return';

export interface ConnectionsPanelProps {
  client: ApiClient;
  /** Administrators may share connections, run allow-listed commands and offer tools through the gateway. */
  isAdmin: boolean;
  /** The address an upstream's sign-in comes back to (this page), with `?connection=<id>&connected=1` added. */
  returnTo: string;
  /** Inside a dialog that is titled already: no heading of its own, no page margins. */
  embedded?: boolean;
  /**
   * The connection a link pointed at (the playground's `#connections?connect=<id>`, which tool errors and MCP
   * clients give): scrolled to, marked, and its Connect button focused; one whose account is missing asks for it.
   */
  highlight?: string | null;
}

/** What the status region says; a quiet one is only read out, as what it is about is on screen beside it. */
type Status = { tone: 'info' | 'success' | 'error'; text: string; quiet?: boolean };
type TestState = { pending: true } | { pending: false; result: TestResult } | { pending: false; error: string };

function signInStatus(answer: SignInReturn, connections: Connection[]): Status {
  const name = connections.find((c) => c.id === answer.id)?.name ?? 'the server';
  return answer.connected
    ? { tone: 'success', text: `Your account at ${name} is connected.` }
    : {
        tone: 'error',
        text: `Your account at ${name} was not connected${answer.error ? `: ${humanizeCode(answer.error)}` : ''}.`,
      };
}

/**
 * The caller's connections to upstream MCP servers: add, edit, test and delete them, connect one's own account for
 * the OAuth ones, and look at (and approve changes to) the tools each offers to the agents. Both web apps show it.
 */
export function ConnectionsPanel({
  client,
  isAdmin,
  returnTo,
  embedded = false,
  highlight = null,
}: ConnectionsPanelProps) {
  const api = useMemo(() => createConnectionsApi(client), [client]);
  const list = useAsync('connections', (signal) => api.list(signal));
  const commands = useAsync(isAdmin ? 'commands' : null, (signal) => api.commands(signal));
  const [signInReturn] = useState(readSignInReturn);
  const [status, setStatus] = useState<Status | null>(null);
  const [returnSeen, setReturnSeen] = useState(false);
  const [form, setForm] = useState<{ mode: 'add' } | { mode: 'edit'; id: string } | null>(null);
  const [tests, setTests] = useState<Record<string, TestState>>({});
  const [toolsOpen, setToolsOpen] = useState<ReadonlySet<string>>(() => new Set());
  const [accountBusy, setAccountBusy] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Connection | null>(null);
  const [disconnecting, setDisconnecting] = useState<Connection | null>(null);
  const [dialogBusy, setDialogBusy] = useState(false);
  const [dialogError, setDialogError] = useState<string | null>(null);
  /** Where focus goes once the list has re-rendered: a card's heading, Edit or Connect button, or Add connection. */
  const focusTarget = useRef<{ id: string; what: 'card' | 'edit' | 'connect' } | 'add' | null>(null);
  /** A link to a connection that is not in the list, whose notice was dismissed or made way for another. */
  const [linkSeen, setLinkSeen] = useState<string | null>(null);
  const highlightRef = useRef(highlight);
  useEffect(() => {
    highlightRef.current = highlight;
  });
  const rootRef = useRef<HTMLElement>(null);
  const addRef = useRef<HTMLButtonElement>(null);
  const headingId = useId();

  /**
   * What this page changed since the list last loaded (saved, or deleted: null), shown at once; the reload that
   * follows every change replaces it with what the service says.
   */
  const [local, setLocal] = useState<{ against: Connection[] | undefined; changes: Map<string, Connection | null> }>(
    () => ({ against: undefined, changes: new Map() }),
  );
  const connections = useMemo(() => {
    const data = list.data;
    if (data === undefined || local.against !== data) return data;
    const merged = data
      .map((c) => (local.changes.has(c.id) ? local.changes.get(c.id) : c))
      .filter((c): c is Connection => c !== null && c !== undefined);
    for (const [id, c] of local.changes) if (c && !data.some((d) => d.id === id)) merged.push(c);
    return merged;
  }, [list.data, local]);
  const { reload } = list;
  const changed = useCallback(
    (id: string, connection: Connection | null) => {
      setLocal((l) => ({
        against: list.data,
        changes: new Map(l.against === list.data ? l.changes : []).set(id, connection),
      }));
      reload();
    },
    [list.data, reload],
  );
  const say = useCallback((text: string, tone: Status['tone'] = 'info', quiet = false) => {
    setStatus({ tone, text, quiet });
    setReturnSeen(true);
    setLinkSeen(highlightRef.current);
  }, []);

  useEffect(() => {
    if (signInReturn) clearSignInReturn();
  }, [signInReturn]);

  // A link to one connection: once the list shows it, it is marked, and the focus goes to it (its Connect button,
  // or the prompt's when the account is missing) once the card shows that.
  const linked = highlight !== null && connections !== undefined ? connections.some((c) => c.id === highlight) : null;
  const highlighted = linked ? highlight : null;
  const linkMissing: Status | null =
    linked === false && linkSeen !== highlight
      ? { tone: 'error', text: 'The connection that link points to is not one of yours (it may have been deleted).' }
      : null;
  useEffect(() => {
    if (highlighted !== null) focusTarget.current = { id: highlighted, what: 'connect' };
  }, [highlighted]);

  // The sign-in's answer, once the list can name the connection it was for, until something newer is said.
  const shown =
    linkMissing ??
    status ??
    (signInReturn && !returnSeen && connections ? signInStatus(signInReturn, connections) : null);

  useEffect(() => {
    const target = focusTarget.current;
    if (target === null || !rootRef.current) return;
    if (target === 'add') {
      focusTarget.current = null;
      addRef.current?.focus();
      return;
    }
    const card = rootRef.current.querySelector(`[data-connection="${CSS.escape(target.id)}"]`);
    const selector = { edit: '[data-action="edit"]', connect: '[data-action="connect"]', card: 'h3' }[target.what];
    const element = card?.querySelector(selector) ?? (target.what === 'connect' ? card?.querySelector('h3') : null);
    // A new connection has its card only once the list has loaded again.
    if (!(element instanceof HTMLElement) && list.loading) return;
    focusTarget.current = null;
    if (element instanceof HTMLElement) {
      if (target.what === 'connect') {
        // The whole card in view, not just the button at its edge.
        card?.scrollIntoView({ block: 'center' });
        element.focus({ preventScroll: true });
      } else element.focus();
    }
  });

  function closeForm(focus: typeof focusTarget.current) {
    focusTarget.current = focus;
    setForm(null);
  }

  async function runTest(connection: Connection) {
    setTests((t) => ({ ...t, [connection.id]: { pending: true } }));
    try {
      const result = await api.test(connection.id);
      setTests((t) => ({ ...t, [connection.id]: { pending: false, result } }));
      say(
        result.ok
          ? `${connection.name} answered: ${result.tools} ${result.tools === 1 ? 'tool' : 'tools'}, ${formatDuration(result.latency_ms)}.`
          : `${connection.name} failed the test: ${result.error.message}`,
        result.ok ? 'success' : 'error',
        true,
      );
    } catch (failure) {
      const error = describeError(failure);
      setTests((t) => ({ ...t, [connection.id]: { pending: false, error } }));
      say(`Could not test ${connection.name}: ${error}`, 'error', true);
    }
  }

  async function connectAccount(connection: Connection) {
    setAccountBusy(connection.id);
    say(`Opening the sign-in page of ${connection.name}…`);
    try {
      const { authorization_url: url } = await api.connectAccount(connection.id, returnTo);
      window.location.assign(url);
    } catch (failure) {
      setAccountBusy(null);
      say(`Could not start signing in to ${connection.name}: ${describeError(failure)}`, 'error');
    }
  }

  /** Runs what a dialog confirmed; `action` answers the connection as it is now, or null when it is gone. */
  async function confirmDialog(
    action: (api: ConnectionsApi, c: Connection) => Promise<Connection | null>,
    done: string,
  ) {
    const connection = deleting ?? disconnecting;
    if (!connection) return;
    setDialogBusy(true);
    setDialogError(null);
    try {
      const after = await action(api, connection);
      setDeleting(null);
      setDisconnecting(null);
      say(done.replace('{name}', connection.name), 'success');
      changed(connection.id, after);
    } catch (failure) {
      setDialogError(describeError(failure));
    } finally {
      setDialogBusy(false);
    }
  }

  const toggleTools = (id: string) =>
    setToolsOpen((open) => {
      const next = new Set(open);
      if (!next.delete(id)) next.add(id);
      return next;
    });

  return (
    <section
      ref={rootRef}
      className={embedded ? 'connections connections--embedded' : 'connections'}
      aria-labelledby={embedded ? undefined : headingId}
      aria-label={embedded ? 'Connections' : undefined}
    >
      <header className="connections__head">
        <div className="connections__intro">
          {embedded ? null : (
            <h2 id={headingId} className="connections__heading">
              Connections
            </h2>
          )}
          <p className="connections__lead">
            MCP servers whose tools your agents may use. Test a connection, sign in where it asks you to, and check
            which tools ask first.
          </p>
        </div>
        <div className="connections__tools">
          <button
            type="button"
            className="icon-button"
            aria-label="Reload connections"
            title="Reload"
            disabled={list.loading}
            onClick={list.reload}
          >
            <RefreshIcon />
          </button>
          <button
            ref={addRef}
            type="button"
            className="button button--primary"
            disabled={form?.mode === 'add'}
            onClick={() => setForm({ mode: 'add' })}
          >
            <PlusIcon />
            Add connection
          </button>
        </div>
      </header>

      <div className="connections__status" role="status" aria-live="polite">
        {shown?.quiet ? (
          <p className="visually-hidden">{shown.text}</p>
        ) : shown ? (
          <p className={`connections__message connections__message--${shown.tone}`}>
            <span>{shown.text}</span>
            <button
              type="button"
              className="button button--ghost button--small"
              onClick={() => {
                setStatus(null);
                setReturnSeen(true);
                setLinkSeen(highlight);
              }}
              aria-label="Dismiss message"
            >
              Dismiss
            </button>
          </p>
        ) : null}
      </div>

      {form?.mode === 'add' ? (
        <div className="conn-card conn-card--form">
          <ConnectionForm
            api={api}
            isAdmin={isAdmin}
            commands={commands.data}
            commandsError={commands.error}
            onCancel={() => closeForm('add')}
            onSaved={(saved) => {
              say(`Added ${saved.name}. Test it to see its tools.`, 'success');
              closeForm({ id: saved.id, what: 'card' });
              changed(saved.id, saved);
            }}
          />
        </div>
      ) : null}

      {connections === undefined ? (
        <PendingState error={list.error} what="connections" onRetry={list.reload} />
      ) : connections.length === 0 && form === null ? (
        <div className="connections__empty">
          <span className="connections__empty-icon" aria-hidden="true">
            <PlugIcon />
          </span>
          <p>No connections yet. Add an MCP server to give your agents its tools.</p>
        </div>
      ) : (
        <ul className="connections__list" aria-label="Connections">
          {connections.map((connection) => (
            <li key={connection.id} data-connection={connection.id}>
              {form?.mode === 'edit' && form.id === connection.id ? (
                <div className="conn-card conn-card--form">
                  <ConnectionForm
                    api={api}
                    isAdmin={isAdmin}
                    commands={commands.data}
                    commandsError={commands.error}
                    connection={connection}
                    onCancel={() => closeForm({ id: connection.id, what: 'edit' })}
                    onSaved={(saved) => {
                      say(`Saved ${saved.name}.`, 'success');
                      setTests(({ [saved.id]: _stale, ...rest }) => rest);
                      closeForm({ id: saved.id, what: 'edit' });
                      changed(saved.id, saved);
                    }}
                  />
                </div>
              ) : (
                <ConnectionCard
                  api={api}
                  connection={connection}
                  highlighted={highlighted === connection.id}
                  test={tests[connection.id]}
                  toolsOpen={toolsOpen.has(connection.id)}
                  accountBusy={accountBusy === connection.id}
                  onTest={() => void runTest(connection)}
                  onToggleTools={() => toggleTools(connection.id)}
                  onConnect={() => void connectAccount(connection)}
                  onDisconnect={() => {
                    setDialogError(null);
                    setDisconnecting(connection);
                  }}
                  onEdit={() => setForm({ mode: 'edit', id: connection.id })}
                  onDelete={() => {
                    setDialogError(null);
                    setDeleting(connection);
                  }}
                  onStatus={say}
                />
              )}
            </li>
          ))}
        </ul>
      )}
      {list.error !== undefined && connections !== undefined ? (
        <p className="form-error" role="alert">
          Could not reload the connections: {describeError(list.error)}
        </p>
      ) : null}

      <ConfirmDialog
        open={deleting !== null}
        title="Delete connection?"
        confirmLabel="Delete"
        destructive
        busy={dialogBusy}
        error={dialogError}
        onConfirm={() =>
          void confirmDialog(async (a, c) => {
            await a.remove(c.id);
            focusTarget.current = 'add';
            return null;
          }, 'Deleted {name}.')
        }
        onCancel={() => setDeleting(null)}
      >
        <p>
          “{deleting?.name}” will be removed
          {deleting?.scope === 'shared'
            ? ' for everyone, and agents lose its tools'
            : ', and your agents lose its tools'}
          . Its stored secret and signed-in accounts are deleted too. This cannot be undone.
        </p>
      </ConfirmDialog>

      <ConfirmDialog
        open={disconnecting !== null}
        title="Disconnect your account?"
        confirmLabel="Disconnect"
        destructive
        busy={dialogBusy}
        error={dialogError}
        onConfirm={() =>
          void confirmDialog(async (a, c) => {
            await a.disconnectAccount(c.id);
            return { ...c, account: { status: 'not_connected', connected_at: null } };
          }, 'Disconnected your account at {name}.')
        }
        onCancel={() => setDisconnecting(null)}
      >
        <p>
          The service forgets your token for “{disconnecting?.name}” and asks the server to revoke it. Its tools stop
          working for you until you connect again.
        </p>
      </ConfirmDialog>
    </section>
  );
}

interface ConnectionCardProps {
  api: ConnectionsApi;
  connection: Connection;
  /** A link pointed here: the card stands out, and asks for the person's account if it is missing. */
  highlighted: boolean;
  test: TestState | undefined;
  toolsOpen: boolean;
  accountBusy: boolean;
  onTest: () => void;
  onToggleTools: () => void;
  onConnect: () => void;
  onDisconnect: () => void;
  onEdit: () => void;
  onDelete: () => void;
  onStatus: (text: string, tone?: 'success' | 'error') => void;
}

function authSummary(connection: Connection): string {
  const { auth } = connection;
  switch (auth.kind) {
    case 'none':
      return 'No sign-in';
    case 'bearer':
      return auth.secret_set ? 'Bearer token (set)' : 'Bearer token (not set)';
    case 'header':
      return `${auth.header_name ?? 'Header'}${auth.secret_set ? ' (set)' : ' (not set)'}`;
    case 'oauth':
      return auth.scopes ? `OAuth · ${auth.scopes}` : 'OAuth';
  }
}

function ConnectionCard({
  api,
  connection,
  highlighted,
  test,
  toolsOpen,
  accountBusy,
  onTest,
  onToggleTools,
  onConnect,
  onDisconnect,
  onEdit,
  onDelete,
  onStatus,
}: ConnectionCardProps) {
  const nameId = useId();
  const toolsId = useId();
  const { account } = connection;
  const hidden = <span className="visually-hidden"> {connection.name}</span>;
  const promptId = useId();
  const askForAccount = highlighted && account.status === 'not_connected';

  return (
    <article
      className={highlighted ? 'conn-card conn-card--highlight' : 'conn-card'}
      aria-labelledby={nameId}
      aria-describedby={askForAccount ? promptId : undefined}
    >
      <div className="conn-card__head">
        <span className="conn-card__icon" aria-hidden="true">
          <PlugIcon />
        </span>
        <div className="conn-card__title">
          <h3 id={nameId} className="conn-card__name" tabIndex={-1}>
            {connection.name}
          </h3>
          <code className="conn-card__slug" title="Its tools are named after this">
            {connection.slug}
          </code>
        </div>
        <div className="conn-card__badges">
          <span className={connection.scope === 'shared' ? 'badge badge--info' : 'badge'}>
            {SCOPE_LABELS[connection.scope]}
          </span>
          <span className="badge">{TRANSPORT_LABELS[connection.transport]}</span>
          {connection.gateway ? (
            <span className="badge badge--accent" title="Offered to the service's MCP clients">
              Gateway
            </span>
          ) : null}
        </div>
      </div>

      <dl className="conn-card__facts">
        <div>
          <dt>{connection.transport === 'stdio' ? 'Command' : 'URL'}</dt>
          <dd>
            <code>{connection.url ?? connection.command ?? '–'}</code>
          </dd>
        </div>
        <div>
          <dt>Sign-in</dt>
          <dd>{authSummary(connection)}</dd>
        </div>
        <div>
          <dt>Asks first</dt>
          <dd>{APPROVAL_LABELS[connection.approval]}</dd>
        </div>
      </dl>

      {askForAccount ? (
        <div className="conn-card__prompt">
          <span className="conn-card__prompt-icon" aria-hidden="true">
            <PlugIcon />
          </span>
          <div className="conn-card__prompt-text">
            <p className="conn-card__prompt-title">Connect your account</p>
            <p id={promptId}>
              {connection.name} signs each person in. Connect your own account so that your agents can use its tools as
              you.
            </p>
          </div>
          <button
            type="button"
            className="button button--primary"
            data-action="connect"
            disabled={accountBusy}
            onClick={onConnect}
          >
            {accountBusy ? <span className="spinner" aria-hidden="true" /> : null}
            Connect your account
            <span className="visually-hidden"> at {connection.name}</span>
          </button>
        </div>
      ) : null}

      {account.status !== 'not_needed' && !askForAccount ? (
        <div className="conn-card__account">
          {account.status === 'connected' ? (
            <span className="badge badge--success">Your account: connected</span>
          ) : (
            <span className="badge badge--warning">Your account: not connected</span>
          )}
          {account.status === 'connected' && account.connected_at ? (
            <time
              className="conn-card__since"
              dateTime={account.connected_at}
              title={formatDateTime(account.connected_at)}
            >
              {formatRelative(account.connected_at)}
            </time>
          ) : null}
          <span className="conn-card__account-actions">
            <button
              type="button"
              className={
                account.status === 'connected' ? 'button button--small' : 'button button--primary button--small'
              }
              data-action="connect"
              disabled={accountBusy}
              onClick={onConnect}
            >
              {accountBusy ? <span className="spinner" aria-hidden="true" /> : null}
              {account.status === 'connected' ? 'Reconnect' : 'Connect'}
              {hidden}
            </button>
            {account.status === 'connected' ? (
              <button type="button" className="button button--ghost button--small" onClick={onDisconnect}>
                Disconnect{hidden}
              </button>
            ) : null}
          </span>
        </div>
      ) : null}

      <div className="conn-card__actions">
        <button type="button" className="button button--small" disabled={test?.pending === true} onClick={onTest}>
          {test?.pending ? <span className="spinner" aria-hidden="true" /> : <ActivityIcon />}
          Test{hidden}
        </button>
        <button
          type="button"
          className="button button--small"
          aria-expanded={toolsOpen}
          aria-controls={toolsOpen ? toolsId : undefined}
          data-active={toolsOpen}
          onClick={onToggleTools}
        >
          <WrenchIcon />
          Tools{hidden}
        </button>
        <span className="conn-card__spacer" />
        {connection.can_edit ? (
          <>
            <button type="button" className="button button--ghost button--small" data-action="edit" onClick={onEdit}>
              <PencilIcon />
              Edit{hidden}
            </button>
            <button type="button" className="button button--ghost button--small conn-card__delete" onClick={onDelete}>
              <TrashIcon />
              Delete{hidden}
            </button>
          </>
        ) : null}
      </div>

      {test && !test.pending ? <TestOutcome test={test} onConnect={onConnect} /> : null}
      {toolsOpen ? <ConnectionTools api={api} connection={connection} id={toolsId} onStatus={onStatus} /> : null}
    </article>
  );
}

function TestOutcome({ test, onConnect }: { test: Exclude<TestState, { pending: true }>; onConnect: () => void }) {
  if ('error' in test) {
    return (
      <div className="conn-test conn-test--failed">
        <p>
          <strong>Test failed.</strong> {test.error}
        </p>
      </div>
    );
  }
  const { result } = test;
  if (!result.ok) {
    return (
      <div className="conn-test conn-test--failed">
        <p>
          <strong>Test failed.</strong> {result.error.message}{' '}
          <code className="conn-test__code">{result.error.code}</code>
        </p>
        {result.connect_url !== undefined ? (
          <button type="button" className="button button--primary button--small" onClick={onConnect}>
            Connect your account
          </button>
        ) : null}
      </div>
    );
  }
  return (
    <div className="conn-test conn-test--ok">
      <p>
        <strong>Connected.</strong> {result.server.name} {result.server.version}
      </p>
      <dl className="conn-test__facts">
        <div>
          <dt>Tools</dt>
          <dd>{formatNumber(result.tools)}</dd>
        </div>
        <div>
          <dt>Latency</dt>
          <dd>{formatDuration(result.latency_ms)}</dd>
        </div>
        <div>
          <dt>Protocol</dt>
          <dd>{result.protocol_version}</dd>
        </div>
      </dl>
    </div>
  );
}
