import { Suspense, lazy, useCallback, useEffect, useState } from 'react';
import type { ApiClient, CurrentUser } from '../../shared/api/api-client';
import { SignedInUser } from '../../shared/auth/signed-in-user';
import { ConnectionsPanel } from '../../shared/connections/connections-panel';
import { PlugIcon } from '../../shared/ui/icons';
import type { BuilderApi, BuilderConfig, WorkflowDefinition } from './api/builder-api';
import { WorkflowList } from './features/workflows/workflow-list';
import { WorkflowsIcon } from './ui/icons';

// The canvas (React Flow and the editor) loads on first use, so the list appears without waiting for it.
const Editor = lazy(() => import('./features/editor/editor').then((module) => ({ default: module.Editor })));

/** Where the address points: the list, a new workflow, a saved one, or the connections page. */
export type Route = { view: 'list' } | { view: 'editor'; id: string | null } | { view: 'connections' };

const CONNECTIONS_HASH = '#/connections';

export function parseRoute(hash: string): Route {
  if (hash === '#/new') return { view: 'editor', id: null };
  if (hash === CONNECTIONS_HASH || hash.startsWith(`${CONNECTIONS_HASH}?`)) return { view: 'connections' };
  const match = /^#\/workflows\/([^/?#]+)$/.exec(hash);
  if (match?.[1]) return { view: 'editor', id: decodeURIComponent(match[1]) };
  return { view: 'list' };
}

export function routeHash(route: Route): string {
  if (route.view === 'list') return '#/';
  if (route.view === 'connections') return CONNECTIONS_HASH;
  return route.id === null ? '#/new' : `#/workflows/${encodeURIComponent(route.id)}`;
}

export interface ShellProps {
  client: ApiClient;
  api: BuilderApi;
  config: BuilderConfig;
  user: CurrentUser;
  onSignOut: () => Promise<void>;
}

/**
 * The signed-in screen: the top bar, and the list or the editor by the address (so Back and a reload keep the
 * place). `opened` counts navigations: the editor starts afresh on each, but not when its first save gives the
 * workflow an id.
 */
export function Shell({ client, api, config, user, onSignOut }: ShellProps) {
  const [route, setRoute] = useState<Route>(() => parseRoute(window.location.hash));
  const [opened, setOpened] = useState(0);
  const [draft, setDraft] = useState<{ definition: WorkflowDefinition; notice: string } | null>(null);

  useEffect(() => {
    const onHash = () => {
      setRoute(parseRoute(window.location.hash));
      setDraft(null);
      setOpened((n) => n + 1);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  useEffect(() => {
    if (route.view === 'list') document.title = 'Workflows · Workflow Builder';
    if (route.view === 'connections') document.title = 'Connections · Workflow Builder';
  }, [route]);

  const isAdmin = user.roles?.includes('admin') ?? false;
  /** An upstream's sign-in page sends the browser back to the connections page. */
  const connectionsUrl = `${window.location.origin}${window.location.pathname}${CONNECTIONS_HASH}`;

  /** Navigates within the app; pushState fires no hashchange, so Back still comes here through onHash. */
  const go = useCallback((next: Route, startingFrom: typeof draft = null) => {
    const hash = routeHash(next);
    if (window.location.hash !== hash) {
      window.history.pushState(null, '', `${window.location.pathname}${window.location.search}${hash}`);
    }
    setRoute(next);
    setDraft(startingFrom);
    setOpened((n) => n + 1);
  }, []);

  const onCreated = useCallback((id: string) => {
    const next: Route = { view: 'editor', id };
    window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}${routeHash(next)}`);
    setDraft(null);
  }, []);

  return (
    <div className="app">
      <header className="topbar">
        <h1 className="brand">
          <span className="brand__mark" aria-hidden="true" />
          <span className="brand__name">Workflow Builder</span>
          <span className="brand__version">v{config.version}</span>
        </h1>
        {route.view !== 'editor' ? (
          // The editor has its own way back (which asks about unsaved changes), so the switch is not shown there.
          <nav className="topbar__nav" aria-label="Views">
            <a className="topbar__link" href="#/" aria-current={route.view === 'list' ? 'page' : undefined}>
              <WorkflowsIcon />
              <span className="topbar__link-text">Workflows</span>
            </a>
            <a
              className="topbar__link"
              href={CONNECTIONS_HASH}
              aria-current={route.view === 'connections' ? 'page' : undefined}
            >
              <PlugIcon />
              <span className="topbar__link-text">Connections</span>
            </a>
          </nav>
        ) : null}
        <div className="topbar__spacer" />
        <SignedInUser user={user} onSignOut={onSignOut} />
      </header>
      {route.view === 'connections' ? (
        <main className="page">
          <ConnectionsPanel client={client} isAdmin={isAdmin} returnTo={connectionsUrl} />
        </main>
      ) : route.view === 'list' ? (
        <WorkflowList
          api={api}
          onOpen={(id) => go({ view: 'editor', id })}
          onNew={() => go({ view: 'editor', id: null })}
          onDraft={(definition, notice) => go({ view: 'editor', id: null }, { definition, notice })}
        />
      ) : (
        <Suspense
          fallback={
            <main className="editor editor--loading">
              <p className="panel-note" role="status">
                <span className="spinner" aria-hidden="true" /> Loading the editor…
              </p>
            </main>
          }
        >
          <Editor
            key={opened}
            client={client}
            api={api}
            config={config}
            workflowId={route.id}
            isAdmin={isAdmin}
            connectionsUrl={connectionsUrl}
            draft={draft}
            onCreated={onCreated}
            onLeave={() => go({ view: 'list' })}
          />
        </Suspense>
      )}
    </div>
  );
}
