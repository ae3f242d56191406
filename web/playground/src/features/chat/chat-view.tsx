import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { ApiClient } from '../../../../shared/api/api-client';
import { createConnectionsApi } from '../../../../shared/connections/connections-api';
import { humanizeCode, type SignInReturn } from '../../../../shared/connections/sign-in-return';
import { formatNumber } from '../../../../shared/ui/format';
import { isOfflineModel, modelLabel, modelSource } from '../../../../shared/ui/model-label';
import type { PlaygroundApi, PlaygroundConfig, Session, Usage } from '../../api/playground-api';
import { ToolViews, ToolViewsContext } from '../app-views/tool-views';
import { messageText, type ChatMessage, type ToolPart } from './chat-model';
import type { SocketStatus } from './chat-socket';
import { Composer } from './composer';
import { MessageView } from './message-view';
import { needsKeyOf, ToolNeedsContext, type ToolNeedsActions } from './tool-needs';
import { useChat, type Turn } from './use-chat';

export interface ChatViewProps {
  client: ApiClient;
  api: PlaygroundApi;
  config: PlaygroundConfig;
  /** The selected session from the list (name, counts); undefined while none is selected. */
  session: Session | undefined;
  sessionId: string | null;
  /** A first message typed before any session existed, to send once this session is open. */
  queuedMessage: string | null;
  onQueuedMessageTaken: () => void;
  /** Sending with no session selected: create one and send there. */
  onStartSession: (text: string) => void;
  onTurnEnd: (usage: Usage | undefined) => void;
  onAuthLost: () => void;
  /** The selected session could not be found: drop it from the list. */
  onSessionMissing: (sessionId: string) => void;
  startingSession: boolean;
  startError: string | null;
  /** Put the cursor in the message box when this session's chat opens. */
  focusComposer: boolean;
  /** The browser came back to this session from signing in at a tool's server: how it went. */
  signInReturn: SignInReturn | null;
  onSignInReturnTaken: () => void;
}

/** The address that brings the browser back to this session's chat (after signing in at a tool's server). */
function sessionAddress(sessionId: string): string {
  return `${window.location.origin}${window.location.pathname}#session=${encodeURIComponent(sessionId)}`;
}

/** The conversation pane: history, the streamed answer, the status line and the message box. */
export function ChatView(props: ChatViewProps) {
  // Read once per sign-in (the workspace, and so this, is there as long as it lasts), whatever the session.
  const { api, config } = props;
  const toolViews = useMemo(() => new ToolViews(api, config.version), [api, config.version]);
  if (props.sessionId === null) {
    return (
      <section className="chat" aria-label="Chat">
        <ChatHeader title="New conversation" config={props.config} />
        <div className="chat__scroll">
          <EmptyConversation config={props.config} />
        </div>
        <div className="chat__footer">
          {props.startError ? (
            <p className="form-error" role="alert">
              {props.startError}
            </p>
          ) : null}
          <StatusLine text={props.startingSession ? 'Creating a session…' : ''} busy={props.startingSession} />
          <Composer
            running={false}
            stopping={false}
            disabled={props.startingSession}
            onSend={props.onStartSession}
            onStop={() => undefined}
          />
        </div>
      </section>
    );
  }
  return (
    <ToolViewsContext.Provider value={toolViews}>
      <SessionChat key={props.sessionId} {...props} sessionId={props.sessionId} />
    </ToolViewsContext.Provider>
  );
}

function SessionChat({
  client,
  api,
  config,
  session,
  sessionId,
  queuedMessage,
  onQueuedMessageTaken,
  onTurnEnd,
  onAuthLost,
  onSessionMissing,
  focusComposer,
  signInReturn,
  onSignInReturnTaken,
}: ChatViewProps & { sessionId: string }) {
  const [turnsEnded, setTurnsEnded] = useState(0);
  /** A message to send again once the answer running now has ended (approved while it still ran). */
  const resendAfterTurn = useRef<string | null>(null);
  const sendRef = useRef<(text: string) => boolean>(() => false);
  const handleTurnEnd = useCallback(
    (usage: Usage | undefined) => {
      setTurnsEnded((n) => n + 1);
      onTurnEnd(usage);
      const again = resendAfterTurn.current;
      resendAfterTurn.current = null;
      if (again !== null) sendRef.current(again);
    },
    [onTurnEnd],
  );
  const chat = useChat({ client, api, sessionId, onTurnEnd: handleTurnEnd, onAuthLost });
  const { send, missing } = chat;
  const connections = useMemo(() => createConnectionsApi(client), [client]);

  // Sending the person's message again (after an approval, or a connected account), at once or after the answer
  // that is running.
  const messagesRef = useRef(chat.messages);
  useEffect(() => {
    messagesRef.current = chat.messages;
    sendRef.current = send;
  });
  const resend = useCallback((assistantKey: string) => {
    const messages = messagesRef.current;
    const at = messages.findIndex((m) => m.key === assistantKey);
    const asked = messages.slice(0, at === -1 ? messages.length : at).findLast((m) => m.role === 'user');
    if (!asked) return;
    const text = messageText(asked);
    if (!sendRef.current(text)) resendAfterTurn.current = text;
  }, []);

  /** The cards whose request is settled, so that the status line no longer points at them. */
  const [settled, setSettled] = useState<ReadonlySet<string>>(() => new Set());
  const settle = useCallback((key: string) => setSettled((s) => (s.has(key) ? s : new Set(s).add(key))), []);
  const needsActions = useMemo<ToolNeedsActions>(
    () => ({ connections, resend, returnTo: sessionAddress(sessionId), settle }),
    [connections, resend, sessionId, settle],
  );

  // Back from signing in at a tool's server: say how it went (once the server's name is known, so that it is
  // announced), and offer to send the last message again.
  const [returned] = useState(signInReturn);
  const [notice, setNotice] = useState<{ connected: boolean; text: string } | null>(null);
  useEffect(() => {
    if (signInReturn !== null) onSignInReturnTaken();
  }, [signInReturn, onSignInReturnTaken]);
  useEffect(() => {
    if (returned === null) return undefined;
    const controller = new AbortController();
    const say = (name: string) => {
      if (controller.signal.aborted) return;
      setNotice(
        returned.connected
          ? {
              connected: true,
              text: `Your account at ${name} is connected. Send your last message again to let the agent use it.`,
            }
          : {
              connected: false,
              text: `Your account at ${name} was not connected${returned.error ? `: ${humanizeCode(returned.error)}` : ''}.`,
            },
      );
    };
    connections.get(returned.id, controller.signal).then(
      (connection) => say(connection.name),
      () => say('the server'),
    );
    return () => controller.abort();
  }, [returned, connections]);
  const lastAsked = chat.messages.findLast((m) => m.role === 'user');
  const canResend = lastAsked !== undefined && chat.turn === null;
  // Coming back, the person means to go on: the focus waits on Send again, once there is something to send.
  const resendButtonRef = useRef<HTMLButtonElement>(null);
  const resendFocused = useRef(false);
  useEffect(() => {
    if (notice?.connected && canResend && !resendFocused.current) {
      resendFocused.current = true;
      resendButtonRef.current?.focus();
    }
  }, [notice, canResend]);

  useEffect(() => {
    if (queuedMessage !== null) {
      onQueuedMessageTaken();
      send(queuedMessage);
    }
  }, [queuedMessage, onQueuedMessageTaken, send]);

  useEffect(() => {
    if (missing) onSessionMissing(sessionId);
  }, [missing, onSessionMissing, sessionId]);

  const scrollRef = useRef<HTMLDivElement>(null);
  const stickRef = useRef(true);
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (el && stickRef.current) el.scrollTop = el.scrollHeight;
  }, [chat.messages, notice]);
  // What grows on its own after it is shown (the view of a tool call, as its run goes on) keeps the end in sight too.
  const listRef = useRef<HTMLDivElement>(null);
  const hasMessages = chat.messages.length > 0;
  useEffect(() => {
    const list = listRef.current;
    const el = scrollRef.current;
    if (!hasMessages || !list || !el) return undefined;
    const observer = new ResizeObserver(() => {
      if (stickRef.current) el.scrollTop = el.scrollHeight;
    });
    observer.observe(list);
    return () => observer.disconnect();
  }, [hasMessages]);

  const title = session?.name || chat.detail?.name || 'Untitled session';
  const model = typeof chat.detail?.metadata?.model === 'string' ? chat.detail.metadata.model : config.model;
  const totalTokens = Number(chat.detail?.metadata?.total_tokens);

  return (
    <section className="chat" aria-label="Chat">
      <ChatHeader
        title={title}
        config={config}
        model={model}
        totalTokens={Number.isFinite(totalTokens) ? totalTokens : undefined}
        connection={chat.connection}
      />
      <div
        ref={scrollRef}
        className="chat__scroll"
        role="region"
        aria-label="Conversation"
        tabIndex={0}
        onScroll={(event) => {
          const el = event.currentTarget;
          stickRef.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
        }}
      >
        {chat.loading && chat.messages.length === 0 ? (
          <p className="chat__placeholder">
            <span className="spinner" aria-hidden="true" /> Loading the conversation…
          </p>
        ) : null}
        {chat.loadError ? (
          <div className="chat__placeholder" role="alert">
            <p>{chat.loadError}</p>
            {!chat.missing ? (
              <button type="button" className="button" onClick={chat.reload}>
                Try again
              </button>
            ) : null}
          </div>
        ) : null}
        {!chat.loading && !chat.loadError && chat.messages.length === 0 ? <EmptyConversation config={config} /> : null}
        {chat.messages.length > 0 ? (
          <ToolNeedsContext.Provider value={needsActions}>
            <div ref={listRef} className="messages">
              {chat.messages.map((message) => (
                <MessageView key={message.key} message={message} />
              ))}
            </div>
          </ToolNeedsContext.Provider>
        ) : null}
      </div>
      <div className="chat__footer">
        <div className="chat__notice-region" aria-live="polite">
          {notice ? (
            <div className={`chat-notice chat-notice--${notice.connected ? 'success' : 'error'}`}>
              <p className="chat-notice__text">{notice.text}</p>
              <div className="chat-notice__actions">
                {notice.connected ? (
                  <button
                    ref={resendButtonRef}
                    type="button"
                    className="button button--primary button--small"
                    disabled={!canResend}
                    onClick={() => {
                      if (!lastAsked) return;
                      setNotice(null);
                      send(messageText(lastAsked));
                    }}
                  >
                    Send last message again
                  </button>
                ) : null}
                <button
                  type="button"
                  className="button button--ghost button--small"
                  aria-label="Dismiss message"
                  onClick={() => setNotice(null)}
                >
                  Dismiss
                </button>
              </div>
            </div>
          ) : null}
        </div>
        <StatusLine
          text={statusText(chat.turn, chat.messages, turnsEnded > 0, settled)}
          busy={chat.turn !== null}
          via={chat.turn?.via}
        />
        <Composer
          running={chat.turn !== null}
          stopping={chat.turn?.stopping ?? false}
          disabled={chat.missing}
          autoFocus={focusComposer}
          onSend={chat.send}
          onStop={chat.stop}
        />
      </div>
    </section>
  );
}

function statusText(
  turn: Turn | null,
  messages: ChatMessage[],
  afterTurn: boolean,
  settled: ReadonlySet<string>,
): string {
  const last = messages[messages.length - 1];
  if (turn) {
    if (turn.stopping) return 'Stopping…';
    if (!last || last.role !== 'assistant' || last.parts.length === 0) return 'Thinking…';
    const part = last.parts[last.parts.length - 1];
    if (part?.kind === 'tool' && !part.done) return `Running tool ${part.name}…`;
    return 'Writing the answer…';
  }
  if (!afterTurn || last?.role !== 'assistant') return '';
  const tokens = last.usage?.total_tokens;
  if (last.status === 'stopped') return tokens !== undefined ? `Stopped, ${formatNumber(tokens)} tokens.` : 'Stopped.';
  if (last.status === 'failed') return 'The answer failed.';
  const asking = last.parts.filter((p): p is ToolPart => p.kind === 'tool' && p.needs !== undefined);
  if (asking.length > 0) {
    // Once the person settled what the answer asked, the card under the call says how; nothing more to say here.
    const open = asking.find((p) => !settled.has(needsKeyOf(last.key, p.id)));
    if (!open?.needs) return '';
    return open.needs.kind === 'approval'
      ? `Answer complete. ${open.needs.tool} waits for your approval.`
      : `Answer complete. ${open.needs.tool} needs your account at its server.`;
  }
  return tokens !== undefined ? `Answer complete, ${formatNumber(tokens)} tokens.` : 'Answer complete.';
}

/** The polite live region: what the assistant is doing, announced without interrupting. */
function StatusLine({ text, busy, via }: { text: string; busy: boolean; via?: 'socket' | 'http' }) {
  return (
    <div className="status-line">
      <p role="status" aria-live="polite" className="status-line__text">
        {busy ? <span className="spinner" aria-hidden="true" /> : null}
        {text}
      </p>
      {busy && via === 'http' ? <span className="badge badge--info">over HTTP</span> : null}
    </div>
  );
}

const CONNECTION_LABELS: Record<SocketStatus, { text: string; tone: string; title: string }> = {
  open: { text: 'Live', tone: 'success', title: 'Connected over WebSocket' },
  connecting: { text: 'Connecting…', tone: 'warning', title: 'Opening the WebSocket' },
  unavailable: {
    text: 'HTTP streaming',
    tone: 'info',
    title: 'The WebSocket is not available; answers stream over HTTP',
  },
  closed: { text: 'Offline', tone: 'danger', title: 'Not connected' },
};

function ChatHeader({
  title,
  config,
  model,
  totalTokens,
  connection,
}: {
  title: string;
  config: PlaygroundConfig;
  model?: string;
  totalTokens?: number;
  connection?: SocketStatus;
}) {
  const label = connection ? CONNECTION_LABELS[connection] : undefined;
  return (
    <header className="chat__header">
      <h2 className="chat__title">{title}</h2>
      <div className="chat__facts">
        <span className="badge" title={modelSource(config)}>
          {modelLabel({ llm_provider: config.llm_provider, model: model ?? config.model })}
        </span>
        {totalTokens !== undefined ? <span className="badge">{formatNumber(totalTokens)} tokens</span> : null}
        {label ? (
          <span className={`badge badge--${label.tone} connection`} title={label.title}>
            <span className="connection__dot" aria-hidden="true" />
            {label.text}
          </span>
        ) : null}
      </div>
    </header>
  );
}

/** Where messages go, as a sentence for each kind of model. */
function ModelSentence({ config }: { config: PlaygroundConfig }) {
  if (isOfflineModel(config)) {
    return (
      <>
        Messages go to <strong>the offline model</strong> (no LLM configured), a stand-in that repeats what you send
        instead of answering it.
      </>
    );
  }
  if (config.llm_provider === 'openai') {
    return (
      <>
        Messages go to <strong>{config.model}</strong> through an OpenAI-compatible API.
      </>
    );
  }
  return (
    <>
      Messages go to <strong>{config.model}</strong>.
    </>
  );
}

function EmptyConversation({ config }: { config: PlaygroundConfig }) {
  return (
    <div className="empty-chat">
      <h3 className="empty-chat__title">Start a conversation</h3>
      <p className="empty-chat__text">
        <ModelSentence config={config} /> Replies stream in as they are written; every tool call shows its arguments and
        result, and the Trace panel shows where the time went.
      </p>
    </div>
  );
}
