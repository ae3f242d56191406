import { useMemo } from 'react';
import type { ApiClient } from '../../shared/api/api-client';
import { SignedInGate } from '../../shared/auth/signed-in-gate';
import { createPlaygroundApi } from './api/playground-api';
import { Workspace } from './workspace';

/** Loads the playground's configuration, then shows sign-in or the workspace. */
export function App({ client }: { client: ApiClient }) {
  const api = useMemo(() => createPlaygroundApi(client), [client]);
  return (
    <SignedInGate client={client} title="Agent Service Playground" loading="the playground" loadConfig={api.config}>
      {({ config, user, signOut }) => (
        <Workspace client={client} api={api} config={config} user={user} onSignOut={signOut} />
      )}
    </SignedInGate>
  );
}
