import { useCallback, useEffect, useId, useRef, useState } from 'react';
import type { ApiClient, CurrentUser } from '../../shared/api/api-client';
import { describeError } from '../../shared/api/api-error';
import { SignedInUser } from '../../shared/auth/signed-in-user';
import { ConnectionsPanel } from '../../shared/connections/connections-panel';
import { clearSignInReturn, readSignInReturn, type SignInReturn } from '../../shared/connections/sign-in-return';
import { ActivityIcon, CloseIcon, PlugIcon } from '../../shared/ui/icons';
import { useMediaQuery } from '../../shared/ui/use-media-query';
import type { PlaygroundApi, PlaygroundConfig } from './api/playground-api';
import { ChatView } from './features/chat/chat-view';
import { ObservabilityPanel } from './features/observability/observability-panel';
import { SessionList, sessionName } from './features/sessions/session-list';
import { useSessions } from './features/sessions/use-sessions';
import { ChatIcon, MenuIcon } from './ui/icons';

/** Below this width the session list is a drawer. */
const NARROW = '(max-width: 760px)';
/** From this width the trace panel sits beside the chat; below it, it is a drawer. */
const WIDE = '(min-width: 1100px)';
const TRACE_PREF_KEY = 'agent-service.playground.trace-open';

/** The chat (with its sessions and trace), or the connections page. */
type View = 'chat' | 'connections';
const CONNECTIONS_HASH = '#connections';

function viewFromHash(): View {
  return window.location.hash === CONNECTIONS_HASH || window.location.hash.startsWith(`${CONNECTIONS_HASH}?`)
    ? 'connections'
    : 'chat';
}

/** The connection a link points at: `#connections?connect=<id>` (where tool errors and MCP clients send people). */
function connectFromHash(): string | null {
  const { hash } = window.location;
  if (!hash.startsWith(`${CONNECTIONS_HASH}?`)) return null;
  return new URLSearchParams(hash.slice(CONNECTIONS_HASH.length + 1)).get('connect');
}

/** Back in a chat session from signing in at a tool's server (the connections page reads its own returns). */
function chatSignInReturn(): (SignInReturn & { sessionId: string }) | null {
  const sessionId = sessionFromHash();
  const answer = viewFromHash() === 'chat' && sessionId ? readSignInReturn() : null;
  return answer && sessionId ? { ...answer, sessionId } : null;
}

function sessionFromHash(): string | null {
  const match = /(?:^#|&)session=([^&]+)/.exec(window.location.hash);
  return match?.[1] ? decodeURIComponent(match[1]) : null;
}

function readTracePreference(): boolean {
  try {
    return localStorage.getItem(TRACE_PREF_KEY) === 'true';
  } catch {
    return false;
  }
}

/** Moves focus into a drawer when it opens and back to its toggle when it closes. */
function useDrawerFocus(open: boolean, overlay: boolean) {
  const drawerRef = useRef<HTMLElement>(null);
  const toggleRef = useRef<HTMLButtonElement>(null);
  const wasOpen = useRef(open);
  useEffect(() => {
    if (overlay && open && !wasOpen.current) drawerRef.current?.focus();
    if (overlay && !open && wasOpen.current && drawerRef.current === null) toggleRef.current?.focus();
    wasOpen.current = open;
  }, [open, overlay]);
  return { drawerRef, toggleRef };
}

export interface WorkspaceProps {
  client: ApiClient;
  api: PlaygroundApi;
  config: PlaygroundConfig;
  user: CurrentUser;
  onSignOut: () => Promise<void>;
}

/** The signed-in screen: sessions, the chat, and the observability panel, laid out for the screen at hand. */
export function Workspace({ client, api, config, user, onSignOut }: WorkspaceProps) {
  const sessions = useSessions(api);
  const { refresh: refreshSessions, forget: forgetSession, create: createSession } = sessions;
  const [view, setView] = useState<View>(viewFromHash);
  const [connectLink, setConnectLink] = useState<string | null>(connectFromHash);
  const [signInReturn, setSignInReturn] = useState(chatSignInReturn);
  const [activeId, setActiveId] = useState<string | null>(sessionFromHash);
  const [queued, setQueued] = useState<{ sessionId: string; text: string } | null>(null);
  const [creating, setCreating] = useState(false);
  const [startError, setStartError] = useState<string | null>(null);
  const [createError, setCreateError] = useState<string | null>(null);
  /** The session just made with New session: its message box takes the focus. */
  const [createdId, setCreatedId] = useState<string | null>(null);
  const [refreshKey, setRefreshKey] = useState(0);
  const [traceOpen, setTraceOpen] = useState(readTracePreference);
  const [sessionsOpen, setSessionsOpen] = useState(false);

  const narrow = useMediaQuery(NARROW);
  const wide = useMediaQuery(WIDE);
  const sessionsOverlay = narrow;
  const traceOverlay = !wide;
  const showSessions = !sessionsOverlay || sessionsOpen;
  const { drawerRef: sessionsDrawerRef, toggleRef: sessionsToggleRef } = useDrawerFocus(sessionsOpen, sessionsOverlay);
  const { drawerRef: traceDrawerRef, toggleRef: traceToggleRef } = useDrawerFocus(traceOpen, traceOverlay);
  const sessionsPanelId = useId();
  const tracePanelId = useId();
  const traceHeadingId = useId();

  const active = sessions.sessions.find((s) => s.session_id === activeId);

  const sessionHash = activeId ? `#session=${encodeURIComponent(activeId)}` : '';

  // The links of the view switch change the address; Back and Forward do too.
  useEffect(() => {
    const onHash = () => {
      const next = viewFromHash();
      setView(next);
      setConnectLink(connectFromHash());
      if (next === 'connections') return;
      const session = sessionFromHash();
      if (session) setActiveId(session);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  // Keep the view and the selected session in the address, so a reload comes back to them.
  useEffect(() => {
    if (view === 'connections') return;
    if (window.location.hash !== sessionHash) {
      window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}${sessionHash}`);
    }
  }, [view, sessionHash]);

  // The sign-in's answer leaves the address at once, so that a reload does not say it again.
  useEffect(() => {
    if (signInReturn) clearSignInReturn();
  }, [signInReturn]);

  useEffect(() => {
    if (view === 'connections') document.title = 'Connections · Playground';
    else document.title = active ? `${sessionName(active)} · Playground` : 'Playground · Agent Service';
  }, [active, view]);

  useEffect(() => {
    try {
      localStorage.setItem(TRACE_PREF_KEY, String(traceOpen));
    } catch {
      // A preference that is not remembered is no loss.
    }
  }, [traceOpen]);

  // An overlay drawer closes with Escape.
  const chatView = view === 'chat';
  const overlayOpen = chatView && ((sessionsOverlay && sessionsOpen) || (traceOverlay && traceOpen));
  useEffect(() => {
    if (!overlayOpen) return undefined;
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented) return;
      if (document.querySelector('dialog[open]')) return;
      setSessionsOpen(false);
      if (traceOverlay) setTraceOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [overlayOpen, traceOverlay]);

  const select = useCallback((id: string) => {
    setActiveId(id);
    setStartError(null);
    setSessionsOpen(false);
  }, []);

  const newSession = useCallback(async () => {
    setCreating(true);
    setCreateError(null);
    try {
      const session = await createSession();
      setCreatedId(session.session_id);
      select(session.session_id);
    } catch (failure) {
      setCreateError(describeError(failure));
    } finally {
      setCreating(false);
    }
  }, [createSession, select]);

  const startSession = useCallback(
    async (text: string) => {
      setCreating(true);
      setStartError(null);
      try {
        const firstLine = text.split('\n')[0]?.trim() ?? '';
        const name = firstLine.length > 60 ? `${firstLine.slice(0, 57).trimEnd()}…` : firstLine;
        const session = await createSession(name || undefined);
        setQueued({ sessionId: session.session_id, text });
        select(session.session_id);
      } catch (failure) {
        setStartError(describeError(failure));
      } finally {
        setCreating(false);
      }
    },
    [createSession, select],
  );

  const takeQueued = useCallback(() => setQueued(null), []);
  const onTurnEnd = useCallback(() => {
    setRefreshKey((n) => n + 1);
    refreshSessions();
  }, [refreshSessions]);
  const onAuthLost = useCallback(() => client.forget(), [client]);
  const onSessionMissing = useCallback((id: string) => forgetSession(id), [forgetSession]);
  const takeSignInReturn = useCallback(() => setSignInReturn(null), []);
  const onDeleted = useCallback((id: string) => setActiveId((current) => (current === id ? null : current)), []);

  const chatInert = overlayOpen;
  return (
    <div className="app">
      <header className="topbar">
        {sessionsOverlay && chatView ? (
          <button
            ref={sessionsToggleRef}
            type="button"
            className="icon-button topbar__menu"
            aria-label="Sessions"
            aria-expanded={sessionsOpen}
            aria-controls={sessionsPanelId}
            onClick={() => {
              setSessionsOpen((open) => !open);
              if (traceOverlay) setTraceOpen(false);
            }}
          >
            <MenuIcon />
          </button>
        ) : null}
        <h1 className="brand">
          <span className="brand__mark" aria-hidden="true" />
          <span className="brand__name">Playground</span>
          <span className="brand__version">v{config.version}</span>
        </h1>
        <nav className="topbar__nav" aria-label="Views">
          <a className="topbar__link" href={sessionHash || '#'} aria-current={chatView ? 'page' : undefined}>
            <ChatIcon />
            <span className="topbar__link-text">Chat</span>
          </a>
          <a className="topbar__link" href={CONNECTIONS_HASH} aria-current={chatView ? undefined : 'page'}>
            <PlugIcon />
            <span className="topbar__link-text">Connections</span>
          </a>
        </nav>
        <div className="topbar__spacer" />
        {chatView ? (
          <button
            ref={traceToggleRef}
            type="button"
            className="button topbar__trace"
            aria-expanded={traceOpen}
            aria-controls={tracePanelId}
            data-active={traceOpen}
            onClick={() => {
              setTraceOpen((open) => !open);
              setSessionsOpen(false);
            }}
          >
            <ActivityIcon />
            Trace
          </button>
        ) : null}
        <SignedInUser user={user} onSignOut={onSignOut} />
      </header>

      {chatView ? null : (
        <main className="page">
          <ConnectionsPanel
            client={client}
            isAdmin={user.roles?.includes('admin') ?? false}
            returnTo={`${window.location.origin}${window.location.pathname}${CONNECTIONS_HASH}`}
            highlight={connectLink}
          />
        </main>
      )}

      {/* Hidden rather than gone on the connections page, so that an answer still streaming goes on. */}
      <div className="workspace" data-trace={traceOpen && !traceOverlay ? 'inline' : 'none'} hidden={!chatView}>
        {showSessions ? (
          <aside
            ref={sessionsDrawerRef}
            id={sessionsPanelId}
            className={sessionsOverlay ? 'sidebar drawer drawer--left' : 'sidebar'}
            aria-label="Sessions"
            tabIndex={sessionsOverlay ? -1 : undefined}
            inert={traceOverlay && traceOpen && !sessionsOverlay ? true : undefined}
          >
            {sessionsOverlay ? (
              <button
                type="button"
                className="icon-button drawer__close"
                aria-label="Close session list"
                onClick={() => setSessionsOpen(false)}
              >
                <CloseIcon />
              </button>
            ) : null}
            <SessionList
              state={sessions}
              activeId={activeId}
              onSelect={select}
              onNew={() => void newSession()}
              creating={creating}
              createError={createError}
              onDeleted={onDeleted}
            />
          </aside>
        ) : null}

        <main className="workspace__main" inert={chatInert ? true : undefined}>
          <ChatView
            client={client}
            api={api}
            config={config}
            session={active}
            sessionId={activeId}
            queuedMessage={queued && queued.sessionId === activeId ? queued.text : null}
            onQueuedMessageTaken={takeQueued}
            onStartSession={(text) => void startSession(text)}
            onTurnEnd={onTurnEnd}
            onAuthLost={onAuthLost}
            onSessionMissing={onSessionMissing}
            startingSession={creating}
            startError={startError}
            focusComposer={createdId !== null && createdId === activeId}
            signInReturn={signInReturn && signInReturn.sessionId === activeId ? signInReturn : null}
            onSignInReturnTaken={takeSignInReturn}
          />
        </main>

        {traceOpen ? (
          <aside
            ref={traceDrawerRef}
            id={tracePanelId}
            className={traceOverlay ? 'trace-panel drawer drawer--right' : 'trace-panel'}
            aria-labelledby={traceHeadingId}
            tabIndex={traceOverlay ? -1 : undefined}
          >
            <ObservabilityPanel
              api={api}
              sessionId={activeId}
              refreshKey={refreshKey}
              headingId={traceHeadingId}
              onClose={() => setTraceOpen(false)}
            />
          </aside>
        ) : null}

        {overlayOpen ? (
          <div
            className="backdrop"
            aria-hidden="true"
            onClick={() => {
              setSessionsOpen(false);
              if (traceOverlay) setTraceOpen(false);
            }}
          />
        ) : null}
      </div>
    </div>
  );
}
