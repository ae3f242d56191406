import { useMemo } from 'react';
import type { ApiClient } from '../../shared/api/api-client';
import { SignedInGate } from '../../shared/auth/signed-in-gate';
import { createBuilderApi } from './api/builder-api';
import { Shell } from './shell';

/** Loads the builder's configuration, then shows sign-in or the builder. */
export function App({ client }: { client: ApiClient }) {
  const api = useMemo(() => createBuilderApi(client), [client]);
  return (
    <SignedInGate
      client={client}
      title="Agent Service Workflow Builder"
      loading="the workflow builder"
      loadConfig={api.config}
    >
      {({ config, user, signOut }) => (
        <Shell client={client} api={api} config={config} user={user} onSignOut={signOut} />
      )}
    </SignedInGate>
  );
}
