import { Suspense, lazy, useCallback, useEffect, useState } from 'react';
import type { ApiClient, CurrentUser } from '../../shared/api/api-client';
import { SignedInUser } from '../../shared/auth/signed-in-user';
import type { BuilderApi, BuilderConfig, WorkflowDefinition } from './api/builder-api';
import { WorkflowList } from './features/workflows/workflow-list';

// The canvas (React Flow and the editor) loads on first use, so the list appears without waiting for it.
const Editor = lazy(() => import('./features/editor/editor').then((module) => ({ default: module.Editor })));

/** Where the address points: the list, a new workflow, or a saved one. */
export type Route = { view: 'list' } | { view: 'editor'; id: string | null };

export function parseRoute(hash: string): Route {
  if (hash === '#/new') return { view: 'editor', id: null };
  const match = /^#\/workflows\/([^/?#]+)$/.exec(hash);
  if (match?.[1]) return { view: 'editor', id: decodeURIComponent(match[1]) };
  return { view: 'list' };
}

export function routeHash(route: Route): string {
  if (route.view === 'list') return '#/';
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
  }, [route]);

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
        <div className="topbar__spacer" />
        <SignedInUser user={user} onSignOut={onSignOut} />
      </header>
      {route.view === 'list' ? (
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
            draft={draft}
            onCreated={onCreated}
            onLeave={() => go({ view: 'list' })}
          />
        </Suspense>
      )}
    </div>
  );
}
