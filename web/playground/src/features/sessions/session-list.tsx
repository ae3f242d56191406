import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import { ConfirmDialog } from '../../../../shared/ui/confirm-dialog';
import { formatDateTime, formatRelative } from '../../../../shared/ui/format';
import { PencilIcon, PlusIcon, TrashIcon } from '../../../../shared/ui/icons';
import type { Session } from '../../api/playground-api';
import type { Sessions } from './use-sessions';

export interface SessionListProps {
  state: Sessions;
  activeId: string | null;
  onSelect: (id: string) => void;
  onNew: () => void;
  creating: boolean;
  /** Why the last New session failed. */
  createError: string | null;
  /** Called after the session was deleted on the server. */
  onDeleted: (id: string) => void;
}

export const sessionName = (session: Pick<Session, 'name'>) => session.name?.trim() || 'Untitled session';

/** The sessions sidebar: new, select, rename in place, delete after confirmation. */
export function SessionList({ state, activeId, onSelect, onNew, creating, createError, onDeleted }: SessionListProps) {
  const [editingId, setEditingId] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Session | null>(null);
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);
  /** Where focus goes once the list has re-rendered: a row's select button, or New session. */
  const focusTargetRef = useRef<{ session: string } | 'new' | null>(null);
  const listRef = useRef<HTMLUListElement>(null);
  const newButtonRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const target = focusTargetRef.current;
    if (target === null) return;
    focusTargetRef.current = null;
    if (target === 'new') {
      newButtonRef.current?.focus();
      return;
    }
    const rows = listRef.current?.querySelectorAll<HTMLElement>('[data-session]') ?? [];
    const row = [...rows].find((r) => r.dataset.session === target.session);
    row?.querySelector<HTMLButtonElement>('.session-row__select')?.focus();
  });

  async function confirmDelete() {
    if (!deleting) return;
    setDeleteBusy(true);
    setDeleteError(null);
    try {
      await state.remove(deleting.session_id);
      onDeleted(deleting.session_id);
      setDeleting(null);
      focusTargetRef.current = 'new';
    } catch (failure) {
      setDeleteError(describeError(failure));
    } finally {
      setDeleteBusy(false);
    }
  }

  return (
    <div className="sessions">
      <div className="sessions__top">
        <h2 className="sessions__heading">Sessions</h2>
        <button
          ref={newButtonRef}
          type="button"
          className="button button--primary button--small"
          onClick={onNew}
          disabled={creating}
        >
          <PlusIcon />
          New session
        </button>
      </div>

      {createError ? (
        <p className="form-error" role="alert">
          {createError}
        </p>
      ) : null}
      {state.loading && state.sessions.length === 0 ? (
        <p className="sessions__note">
          <span className="spinner" aria-hidden="true" /> Loading sessions…
        </p>
      ) : null}
      {state.error ? (
        <div className="sessions__note" role="alert">
          <p>{state.error}</p>
          <button type="button" className="button button--small" onClick={state.retry}>
            Try again
          </button>
        </div>
      ) : null}
      {!state.loading && !state.error && state.sessions.length === 0 ? (
        <p className="sessions__note">No sessions yet. Start one with New session or just send a message.</p>
      ) : null}

      <ul ref={listRef} className="sessions__list" aria-label="Sessions">
        {state.sessions.map((session) =>
          editingId === session.session_id ? (
            <RenameRow
              key={session.session_id}
              session={session}
              onRename={(name) => state.rename(session.session_id, name)}
              onDone={(returnFocus) => {
                setEditingId(null);
                if (returnFocus) focusTargetRef.current = { session: session.session_id };
              }}
            />
          ) : (
            <li
              key={session.session_id}
              className="session-row"
              data-session={session.session_id}
              data-active={session.session_id === activeId}
            >
              <button
                type="button"
                className="session-row__select"
                aria-current={session.session_id === activeId ? 'true' : undefined}
                onClick={() => onSelect(session.session_id)}
              >
                <span className="session-row__name">{sessionName(session)}</span>
                <span className="session-row__meta">
                  {session.message_count !== undefined
                    ? `${session.message_count} ${session.message_count === 1 ? 'message' : 'messages'} · `
                    : ''}
                  <time dateTime={session.updated_at} title={formatDateTime(session.updated_at)}>
                    {formatRelative(session.updated_at)}
                  </time>
                </span>
              </button>
              <div className="session-row__actions">
                <button
                  type="button"
                  className="icon-button"
                  aria-label={`Rename ${sessionName(session)}`}
                  title="Rename"
                  onClick={() => setEditingId(session.session_id)}
                >
                  <PencilIcon />
                </button>
                <button
                  type="button"
                  className="icon-button icon-button--danger"
                  aria-label={`Delete ${sessionName(session)}`}
                  title="Delete"
                  onClick={() => {
                    setDeleteError(null);
                    setDeleting(session);
                  }}
                >
                  <TrashIcon />
                </button>
              </div>
            </li>
          ),
        )}
      </ul>

      {state.hasMore ? (
        <button
          type="button"
          className="button button--ghost button--small sessions__more"
          onClick={state.loadMore}
          disabled={state.loadingMore}
        >
          {state.loadingMore ? 'Loading…' : 'Load more sessions'}
        </button>
      ) : null}

      <ConfirmDialog
        open={deleting !== null}
        title="Delete session?"
        confirmLabel="Delete"
        destructive
        busy={deleteBusy}
        error={deleteError}
        onConfirm={() => void confirmDelete()}
        onCancel={() => setDeleting(null)}
      >
        <p>“{deleting ? sessionName(deleting) : ''}” and all of its messages will be deleted. This cannot be undone.</p>
      </ConfirmDialog>
    </div>
  );
}

function RenameRow({
  session,
  onRename,
  onDone,
}: {
  session: Session;
  onRename: (name: string) => Promise<unknown>;
  /** True when the keyboard finished the edit (Enter, Escape), so focus goes back to the row. */
  onDone: (returnFocus: boolean) => void;
}) {
  const [name, setName] = useState(session.name ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const inputRef = useRef<HTMLInputElement>(null);
  const finishedRef = useRef(false);
  const savingRef = useRef(false);

  useEffect(() => {
    inputRef.current?.focus();
    inputRef.current?.select();
  }, []);

  async function save(returnFocus: boolean) {
    if (finishedRef.current || savingRef.current) return;
    const trimmed = name.trim();
    if (!trimmed || trimmed === (session.name ?? '')) {
      finishedRef.current = true;
      onDone(returnFocus);
      return;
    }
    savingRef.current = true;
    setBusy(true);
    setError(null);
    try {
      await onRename(trimmed);
      finishedRef.current = true;
      onDone(returnFocus);
    } catch (failure) {
      setError(describeError(failure));
      setBusy(false);
      inputRef.current?.focus();
    } finally {
      savingRef.current = false;
    }
  }

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key === 'Escape') {
      event.preventDefault();
      finishedRef.current = true;
      onDone(true);
    }
  }

  return (
    <li className="session-row session-row--editing">
      <form
        className="session-row__rename"
        onSubmit={(event) => {
          event.preventDefault();
          void save(true);
        }}
      >
        <input
          ref={inputRef}
          className="input"
          aria-label="Session name"
          value={name}
          maxLength={200}
          readOnly={busy}
          aria-busy={busy}
          onChange={(event) => setName(event.target.value)}
          onKeyDown={onKeyDown}
          onBlur={() => void save(false)}
        />
        {error ? (
          <p className="form-error" role="alert">
            {error}
          </p>
        ) : null}
      </form>
    </li>
  );
}
