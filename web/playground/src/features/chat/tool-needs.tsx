import { createContext, useContext, useEffect, useId, useRef, useState } from 'react';
import { ApiError, describeError } from '../../../../shared/api/api-error';
import type { ConnectionsApi } from '../../../../shared/connections/connections-api';
import { prettyJson } from '../../../../shared/ui/format';
import { CloseIcon, PlugIcon } from '../../../../shared/ui/icons';
import { CheckIcon, ShieldIcon } from '../../ui/icons';
import type { ToolNeeds } from './chat-model';

/** What the cards under a tool call do with what the person decides. SessionChat provides it. */
export interface ToolNeedsActions {
  connections: ConnectionsApi;
  /** Sends again the person's message that led to the answer with this key (once no answer is running). */
  resend: (assistantKey: string) => void;
  /** The address an upstream's sign-in brings the browser back to: this chat session. */
  returnTo: string;
  /** The card's request is settled (decided, or no longer open): the status line stops pointing at it. */
  settle: (needsKey: string) => void;
}

export const ToolNeedsContext = createContext<ToolNeedsActions | null>(null);

/** Names a card's request across the conversation (call ids repeat from one answer to the next). */
export const needsKeyOf = (messageKey: string, callId: string) => `${messageKey}/${callId}`;

interface CardProps {
  messageKey: string;
  callId: string;
}

/** What a call needs of the person, under the call: approve it, or connect one's account at its server. */
export function ToolNeedsCard({ needs, messageKey, callId }: CardProps & { needs: ToolNeeds }) {
  const actions = useContext(ToolNeedsContext);
  if (!actions) return null;
  return needs.kind === 'approval' ? (
    <ApprovalCard needs={needs} actions={actions} messageKey={messageKey} callId={callId} />
  ) : (
    <ConnectCard needs={needs} actions={actions} messageKey={messageKey} callId={callId} />
  );
}

type ApprovalStep = 'asking' | 'approving' | 'declining' | 'approved' | 'declined' | 'expired';

const APPROVAL_BADGES: Record<ApprovalStep, { text: string; tone: string }> = {
  asking: { text: 'Waiting for you', tone: 'warning' },
  approving: { text: 'Waiting for you', tone: 'warning' },
  declining: { text: 'Waiting for you', tone: 'warning' },
  approved: { text: 'Approved', tone: 'success' },
  declined: { text: 'Declined', tone: 'danger' },
  expired: { text: 'Expired', tone: '' },
};

/** After a decision the buttons are gone: the focus, if it was on one, goes to the card's title instead. */
function useFocusTitleWhenSettled(settled: boolean) {
  const titleRef = useRef<HTMLParagraphElement>(null);
  const cardRef = useRef<HTMLElement>(null);
  const hadFocus = useRef(false);
  useEffect(() => {
    if (!settled) return;
    if (hadFocus.current && (document.activeElement === document.body || document.activeElement === null)) {
      titleRef.current?.focus();
    }
    hadFocus.current = false;
  }, [settled]);
  const noteFocus = () => {
    hadFocus.current = cardRef.current?.contains(document.activeElement) ?? false;
  };
  return { titleRef, cardRef, noteFocus };
}

function ApprovalCard({
  needs,
  actions,
  messageKey,
  callId,
}: CardProps & { needs: Extract<ToolNeeds, { kind: 'approval' }>; actions: ToolNeedsActions }) {
  const [step, setStep] = useState<ApprovalStep>('asking');
  const [error, setError] = useState<string | null>(null);
  const [server, setServer] = useState<string>();
  const titleId = useId();
  const toolId = useId();
  const settled = step === 'approved' || step === 'declined' || step === 'expired';
  const { titleRef, cardRef, noteFocus } = useFocusTitleWhenSettled(settled);
  const { connections, settle, resend } = actions;
  const key = needsKeyOf(messageKey, callId);

  // Which server it is, and whether the request is still open.
  useEffect(() => {
    const controller = new AbortController();
    connections.approval(needs.approvalId, controller.signal).then(
      (approval) => setServer(approval.server),
      (failure: unknown) => {
        if (controller.signal.aborted || !(failure instanceof ApiError) || failure.status !== 404) return;
        setStep((s) => (s === 'asking' ? 'expired' : s));
        settle(key);
      },
    );
    return () => controller.abort();
  }, [connections, needs.approvalId, settle, key]);

  async function decide(approve: boolean) {
    noteFocus();
    setStep(approve ? 'approving' : 'declining');
    setError(null);
    try {
      await connections.decideApproval(needs.approvalId, approve);
      setStep(approve ? 'approved' : 'declined');
      settle(key);
      // The agent makes the same call again for the same message, and this time it runs.
      if (approve) resend(messageKey);
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 404) {
        setStep('expired');
        settle(key);
        return;
      }
      setStep('asking');
      setError(`Could not ${approve ? 'approve' : 'decline'} the call: ${describeError(failure)}`);
    }
  }

  const busy = step === 'approving' || step === 'declining';
  const badge = APPROVAL_BADGES[step];
  const status = {
    asking: '',
    approving: 'Approving…',
    declining: 'Declining…',
    approved: 'Approved. Your message went to the agent again; this time the call runs (see the answer below).',
    declined: `Declined. ${needs.tool} did not run.`,
    expired: 'This request is no longer open (an approval waits 15 minutes). Send your message again to be asked anew.',
  }[step];

  return (
    <section
      ref={cardRef}
      className={`needs-card needs-card--approval${settled ? ` needs-card--settled needs-card--${step}` : ''}`}
      aria-labelledby={`${titleId} ${toolId}`}
    >
      <div className="needs-card__head">
        <span className="needs-card__icon" aria-hidden="true">
          <ShieldIcon />
        </span>
        <p id={titleId} ref={titleRef} className="needs-card__title" tabIndex={-1}>
          Approval needed
        </p>
        <code id={toolId} className="needs-card__tool">
          {needs.tool}
        </code>
        <span className={badge.tone ? `badge badge--${badge.tone} needs-card__badge` : 'badge needs-card__badge'}>
          {badge.text}
        </span>
      </div>
      <p className="needs-card__text">
        This tool changes data{server ? ` at ${server}` : ''}, so a person approves each call. It runs only if you
        approve this one, with these arguments:
      </p>
      <pre className="code-block needs-card__args">{prettyJson(needs.args) || '{}'}</pre>
      {settled ? null : (
        <div className="needs-card__actions">
          <button
            type="button"
            className="button button--primary button--small"
            disabled={busy}
            onClick={() => void decide(true)}
          >
            {step === 'approving' ? <span className="spinner" aria-hidden="true" /> : <CheckIcon />}
            Approve and run
            <span className="visually-hidden"> {needs.tool}</span>
          </button>
          <button type="button" className="button button--small" disabled={busy} onClick={() => void decide(false)}>
            {step === 'declining' ? <span className="spinner" aria-hidden="true" /> : <CloseIcon />}
            Decline
            <span className="visually-hidden"> {needs.tool}</span>
          </button>
        </div>
      )}
      <p className="needs-card__status" role="status" aria-live="polite">
        {status}
      </p>
      {error ? (
        <p className="form-error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}

function ConnectCard({
  needs,
  actions,
  messageKey,
  callId,
}: CardProps & { needs: Extract<ToolNeeds, { kind: 'connect' }>; actions: ToolNeedsActions }) {
  const [server, setServer] = useState<{ name: string; connected: boolean }>();
  const [opening, setOpening] = useState(false);
  const [resent, setResent] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const titleId = useId();
  const toolId = useId();
  const { connections, returnTo, resend, settle } = actions;
  const { titleRef, cardRef, noteFocus } = useFocusTitleWhenSettled(resent);

  // The server's name, and whether the account got connected meanwhile (in another tab, say).
  useEffect(() => {
    const controller = new AbortController();
    connections.get(needs.connectionId, controller.signal).then(
      (connection) => setServer({ name: connection.name, connected: connection.account.status === 'connected' }),
      () => undefined,
    );
    return () => controller.abort();
  }, [connections, needs.connectionId]);

  async function connect() {
    setOpening(true);
    setError(null);
    try {
      const { authorization_url: url } = await connections.connectAccount(needs.connectionId, returnTo);
      window.location.assign(url);
    } catch (failure) {
      setOpening(false);
      setError(`Could not start signing in${server ? ` to ${server.name}` : ''}: ${describeError(failure)}`);
    }
  }

  const where = server ? server.name : 'its server';
  const status = opening
    ? `Opening the sign-in page of ${where}…`
    : resent
      ? 'Your message went to the agent again.'
      : '';

  return (
    <section
      ref={cardRef}
      className={`needs-card needs-card--connect${resent ? ' needs-card--settled needs-card--approved' : ''}`}
      aria-labelledby={`${titleId} ${toolId}`}
    >
      <div className="needs-card__head">
        <span className="needs-card__icon" aria-hidden="true">
          <PlugIcon />
        </span>
        <p id={titleId} ref={titleRef} className="needs-card__title" tabIndex={-1}>
          Connect your account
        </p>
        <code id={toolId} className="needs-card__tool">
          {needs.tool}
        </code>
        {server?.connected ? (
          <span className="badge badge--success needs-card__badge">Connected</span>
        ) : (
          <span className="badge badge--warning needs-card__badge">Sign-in needed</span>
        )}
      </div>
      <p className="needs-card__text">
        {server?.connected
          ? `Your account at ${where} is connected now. Send your message again to let the agent use it.`
          : `This tool runs with your own account at ${where}, which is not connected yet. Connect it; you come back ` +
            'here afterwards, and can send your message again.'}
      </p>
      {resent ? null : (
        <div className="needs-card__actions">
          {server?.connected ? (
            <button
              type="button"
              className="button button--primary button--small"
              onClick={() => {
                noteFocus();
                setResent(true);
                settle(needsKeyOf(messageKey, callId));
                resend(messageKey);
              }}
            >
              Send your message again
            </button>
          ) : (
            <button
              type="button"
              className="button button--primary button--small"
              disabled={opening}
              onClick={() => void connect()}
            >
              {opening ? <span className="spinner" aria-hidden="true" /> : <PlugIcon />}
              {server ? `Connect ${server.name}` : 'Connect your account'}
              {server ? null : <span className="visually-hidden"> for {needs.tool}</span>}
            </button>
          )}
          <a className="needs-card__link" href={`#connections?connect=${encodeURIComponent(needs.connectionId)}`}>
            Open in Connections
          </a>
        </div>
      )}
      <p className="needs-card__status" role="status" aria-live="polite">
        {status}
      </p>
      {error ? (
        <p className="form-error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}
