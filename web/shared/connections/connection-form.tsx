import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { describeError } from '../api/api-error';
import {
  SLUG_PATTERN,
  type AllowedCommand,
  type Approval,
  type AuthKind,
  type Connection,
  type ConnectionInput,
  type ConnectionScope,
  type ConnectionsApi,
  type Transport,
} from './connections-api';
import { APPROVAL_LABELS, AUTH_LABELS, TRANSPORT_LABELS } from './labels';

export interface ConnectionFormProps {
  api: ConnectionsApi;
  isAdmin: boolean;
  /** The commands an administrator may run over stdio; undefined while they load. */
  commands: AllowedCommand[] | undefined;
  commandsError: unknown;
  /** The connection to edit; absent to add one. */
  connection?: Connection;
  onSaved: (connection: Connection, created: boolean) => void;
  onCancel: () => void;
}

const isHttp = (transport: Transport) => transport !== 'stdio';

/** A labelled field with an optional hint that the control is described by. */
function Field({
  label,
  hint,
  extra,
  children,
}: {
  label: string;
  hint?: ReactNode;
  /** Shown after the label (the "set" indicator of a secret). */
  extra?: ReactNode;
  children: (ids: { id: string; describedBy: string | undefined }) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div className="field conn-form__field">
      <div className="conn-form__label-row">
        <label htmlFor={id}>{label}</label>
        {extra}
      </div>
      {children({ id, describedBy: hint ? hintId : undefined })}
      {hint ? (
        <p id={hintId} className="conn-form__hint">
          {hint}
        </p>
      ) : null}
    </div>
  );
}

/**
 * Adds a connection or edits one: the fields follow the transport (a URL or an allow-listed command) and the kind of
 * sign-in (a header's name, a secret, OAuth scopes). A secret is write-only: the form only says whether one is set,
 * and an empty secret field keeps it.
 */
export function ConnectionForm({
  api,
  isAdmin,
  commands,
  commandsError,
  connection,
  onSaved,
  onCancel,
}: ConnectionFormProps) {
  const editing = connection !== undefined;
  const [name, setName] = useState(connection?.name ?? '');
  const [slug, setSlug] = useState(connection?.slug ?? '');
  const [scope, setScope] = useState<ConnectionScope>(connection?.scope ?? 'personal');
  const [transport, setTransport] = useState<Transport>(connection?.transport ?? 'streamable_http');
  const [url, setUrl] = useState(connection?.url ?? '');
  const [command, setCommand] = useState(connection?.command ?? '');
  const [authKind, setAuthKind] = useState<AuthKind>(connection?.auth.kind ?? 'none');
  const [headerName, setHeaderName] = useState(connection?.auth.header_name ?? '');
  const [secret, setSecret] = useState('');
  const [scopes, setScopes] = useState(connection?.auth.scopes ?? '');
  const [gateway, setGateway] = useState(connection?.gateway ?? false);
  const [approval, setApproval] = useState<Approval>(connection?.approval ?? 'destructive');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  /** Marks the fields the browser refused only once someone tried to save. */
  const [tried, setTried] = useState(false);
  const headingRef = useRef<HTMLHeadingElement>(null);
  const headingId = useId();
  const scopeName = useId();
  const gatewayId = useId();

  useEffect(() => {
    headingRef.current?.focus();
  }, []);

  // A secret already stored counts only while the kind of sign-in that uses it stays the same.
  const secretKind = authKind === 'bearer' || authKind === 'header';
  const secretSet = editing && connection.auth.secret_set && connection.auth.kind === authKind;
  const canStdio = isAdmin || transport === 'stdio';
  const canGateway = isAdmin && scope === 'shared';

  function input(): ConnectionInput {
    const auth: NonNullable<ConnectionInput['auth']> = { kind: isHttp(transport) ? authKind : 'none' };
    if (auth.kind === 'header') auth.header_name = headerName.trim();
    if ((auth.kind === 'bearer' || auth.kind === 'header') && secret) auth.secret = secret;
    if (auth.kind === 'oauth' && scopes.trim()) auth.scopes = scopes.trim();
    // Who may use a connection and how it is reached are settled when it is made.
    const body: ConnectionInput = editing
      ? { name: name.trim(), auth, approval }
      : { name: name.trim(), scope, transport, auth, approval };
    if (slug.trim()) body.slug = slug.trim();
    if (isHttp(transport)) body.url = url.trim();
    else body.command = command;
    if (isAdmin) body.gateway = canGateway && gateway;
    return body;
  }

  async function submit() {
    setBusy(true);
    setError(null);
    try {
      const saved = editing ? await api.update(connection.id, input()) : await api.create(input());
      onSaved(saved, !editing);
    } catch (failure) {
      setError(describeError(failure));
      setBusy(false);
    }
  }

  return (
    <form
      className="conn-form"
      aria-labelledby={headingId}
      aria-busy={busy}
      data-tried={tried}
      onInvalidCapture={() => setTried(true)}
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
      onKeyDown={(event) => {
        if (event.key === 'Escape' && !busy && !event.defaultPrevented) {
          event.preventDefault();
          onCancel();
        }
      }}
    >
      <h3 ref={headingRef} id={headingId} className="conn-form__title" tabIndex={-1}>
        {editing ? `Edit ${connection.name}` : 'Add a connection'}
      </h3>

      <div className="conn-form__grid">
        <Field label="Name">
          {({ id, describedBy }) => (
            <input
              id={id}
              required
              maxLength={100}
              autoComplete="off"
              value={name}
              aria-describedby={describedBy}
              onChange={(event) => setName(event.target.value)}
            />
          )}
        </Field>
        <Field
          label="Slug"
          hint={
            <>
              Its tools are offered as <code>{slug || 'slug'}__tool</code>. Lowercase letters, digits and hyphens, up to
              24; {editing ? 'changing it renames the tools' : 'leave it empty to make one from the name'}.
            </>
          }
        >
          {({ id, describedBy }) => (
            <input
              id={id}
              className="conn-form__mono"
              pattern={SLUG_PATTERN}
              maxLength={24}
              autoComplete="off"
              spellCheck={false}
              value={slug}
              title="Starts with a lowercase letter; then lowercase letters, digits and hyphens (24 at most)."
              aria-describedby={describedBy}
              onChange={(event) => setSlug(event.target.value)}
            />
          )}
        </Field>
      </div>

      {isAdmin ? (
        <fieldset className="conn-form__choices" disabled={editing}>
          <legend className="field-label">Who can use it{editing ? ' (set when it was added)' : ''}</legend>
          <label className="conn-form__choice">
            <input
              type="radio"
              name={scopeName}
              value="personal"
              checked={scope === 'personal'}
              onChange={() => setScope('personal')}
            />
            <span>
              <strong>Personal</strong>
              <span className="conn-form__choice-hint">Only you</span>
            </span>
          </label>
          <label className="conn-form__choice">
            <input
              type="radio"
              name={scopeName}
              value="shared"
              checked={scope === 'shared'}
              onChange={() => setScope('shared')}
            />
            <span>
              <strong>Shared</strong>
              <span className="conn-form__choice-hint">Everyone on this service</span>
            </span>
          </label>
        </fieldset>
      ) : null}

      <div className="conn-form__grid">
        <Field label="Transport" hint={editing ? 'Set when it was added.' : undefined}>
          {({ id, describedBy }) => (
            <select
              id={id}
              disabled={editing}
              value={transport}
              aria-describedby={describedBy}
              onChange={(event) => setTransport(event.target.value as Transport)}
            >
              <option value="streamable_http">{TRANSPORT_LABELS.streamable_http}</option>
              <option value="sse">{TRANSPORT_LABELS.sse} (older servers)</option>
              {canStdio ? (
                <option value="stdio">{TRANSPORT_LABELS.stdio} (a command on the service’s host)</option>
              ) : null}
            </select>
          )}
        </Field>
        {isHttp(transport) ? (
          <Field label="Server URL">
            {({ id, describedBy }) => (
              <input
                id={id}
                className="conn-form__mono"
                type="url"
                required
                autoComplete="off"
                spellCheck={false}
                placeholder="https://mcp.example.com/mcp"
                value={url}
                aria-describedby={describedBy}
                onChange={(event) => setUrl(event.target.value)}
              />
            )}
          </Field>
        ) : (
          <Field
            label="Command"
            hint={
              commandsError !== undefined
                ? `Could not load the allowed commands: ${describeError(commandsError)}`
                : commands?.find((c) => c.name === command)?.description
            }
          >
            {({ id, describedBy }) => (
              <select
                id={id}
                required
                value={command}
                aria-describedby={describedBy}
                onChange={(event) => setCommand(event.target.value)}
              >
                <option value="">
                  {commands === undefined && commandsError === undefined
                    ? 'Loading commands…'
                    : commands?.length === 0
                      ? 'No commands are allowed'
                      : 'Choose a command'}
                </option>
                {command && !commands?.some((c) => c.name === command) ? (
                  <option value={command}>{command}</option>
                ) : null}
                {(commands ?? []).map((c) => (
                  <option key={c.name} value={c.name}>
                    {c.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
      </div>

      {isHttp(transport) ? (
        <div className="conn-form__grid conn-form__grid--thirds">
          <Field
            label="Sign-in"
            hint={
              authKind === 'oauth'
                ? 'Each person connects their own account at the server before its tools work for them.'
                : undefined
            }
          >
            {({ id, describedBy }) => (
              <select
                id={id}
                value={authKind}
                aria-describedby={describedBy}
                onChange={(event) => setAuthKind(event.target.value as AuthKind)}
              >
                <option value="none">{AUTH_LABELS.none}</option>
                <option value="bearer">{AUTH_LABELS.bearer}</option>
                <option value="header">{AUTH_LABELS.header}</option>
                <option value="oauth">{AUTH_LABELS.oauth}</option>
              </select>
            )}
          </Field>
          {authKind === 'header' ? (
            <Field label="Header name">
              {({ id, describedBy }) => (
                <input
                  id={id}
                  className="conn-form__mono"
                  required
                  autoComplete="off"
                  spellCheck={false}
                  placeholder="X-API-Key"
                  value={headerName}
                  aria-describedby={describedBy}
                  onChange={(event) => setHeaderName(event.target.value)}
                />
              )}
            </Field>
          ) : null}
          {secretKind ? (
            <Field
              label={authKind === 'bearer' ? 'Token' : 'Header value'}
              extra={
                secretSet ? (
                  <span className="badge badge--success">Set</span>
                ) : editing ? (
                  <span className="badge">Not set</span>
                ) : null
              }
              hint={
                secretSet
                  ? 'Stored and never shown. Type a new value to replace it, or leave this empty to keep it.'
                  : 'Stored encrypted and never shown again.'
              }
            >
              {({ id, describedBy }) => (
                <input
                  id={id}
                  className="conn-form__mono"
                  type="password"
                  required={!secretSet}
                  autoComplete="new-password"
                  spellCheck={false}
                  placeholder={secretSet ? '••••••••  (unchanged)' : ''}
                  value={secret}
                  aria-describedby={describedBy}
                  onChange={(event) => setSecret(event.target.value)}
                />
              )}
            </Field>
          ) : null}
          {authKind === 'oauth' ? (
            <Field label="Scopes" hint="Optional, separated by spaces. Empty asks for what the server suggests.">
              {({ id, describedBy }) => (
                <input
                  id={id}
                  className="conn-form__mono"
                  autoComplete="off"
                  spellCheck={false}
                  placeholder="read write"
                  value={scopes}
                  aria-describedby={describedBy}
                  onChange={(event) => setScopes(event.target.value)}
                />
              )}
            </Field>
          ) : null}
        </div>
      ) : null}

      <div className="conn-form__grid">
        <Field label="Ask before running" hint="A person approves each call of these tools before it runs.">
          {({ id, describedBy }) => (
            <select
              id={id}
              value={approval}
              aria-describedby={describedBy}
              onChange={(event) => setApproval(event.target.value as Approval)}
            >
              {(['destructive', 'writes', 'never'] as const).map((a) => (
                <option key={a} value={a}>
                  {APPROVAL_LABELS[a]}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>

      {canGateway ? (
        <div className="conn-form__check">
          <input
            id={gatewayId}
            type="checkbox"
            checked={gateway}
            aria-describedby={`${gatewayId}-hint`}
            onChange={(event) => setGateway(event.target.checked)}
          />
          <div>
            <label htmlFor={gatewayId}>Offer its tools through the gateway</label>
            <p id={`${gatewayId}-hint`} className="conn-form__hint">
              MCP clients of this service (not only its agents) see these tools too.
            </p>
          </div>
        </div>
      ) : null}

      {error ? (
        <p className="form-error" role="alert">
          {error}
        </p>
      ) : null}

      <div className="conn-form__actions">
        <button type="button" className="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="submit" className="button button--primary" disabled={busy}>
          {busy ? <span className="spinner" aria-hidden="true" /> : null}
          {editing ? 'Save changes' : 'Save connection'}
        </button>
      </div>
    </form>
  );
}
