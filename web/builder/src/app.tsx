import { useMemo, type ReactNode } from 'react';
import type { ApiClient } from '../../shared/api/api-client';
import { describeError } from '../../shared/api/api-error';
import { SignInForm } from '../../shared/auth/sign-in-form';
import { useAuth } from '../../shared/auth/use-auth';
import { useAsync } from '../../shared/ui/use-async';
import { createBuilderApi } from './api/builder-api';
import { Shell } from './shell';

const TITLE = 'Agent Service Workflow Builder';

function Splash({ children }: { children: ReactNode }) {
  return (
    <main className="splash">
      <div className="splash__card">{children}</div>
    </main>
  );
}

/** Loads the builder's configuration, then shows sign-in or the builder. */
export function App({ client }: { client: ApiClient }) {
  const api = useMemo(() => createBuilderApi(client), [client]);
  const config = useAsync('config', (signal) => api.config(signal));
  const auth = useAuth(client);

  if (config.error !== undefined || auth.state.status === 'unreachable') {
    const message =
      auth.state.status === 'unreachable' ? auth.state.message : describeError(config.error ?? 'Unavailable');
    return (
      <Splash>
        <h1 className="splash__title">{TITLE}</h1>
        <p className="form-error" role="alert">
          {message}
        </p>
        <button
          type="button"
          className="button button--primary"
          onClick={() => {
            config.reload();
            auth.retry();
          }}
        >
          Try again
        </button>
      </Splash>
    );
  }

  if (config.data === undefined || auth.state.status === 'checking') {
    return (
      <Splash>
        <p className="splash__loading" role="status">
          <span className="spinner" aria-hidden="true" /> Loading the workflow builder…
        </p>
      </Splash>
    );
  }

  const cfg = config.data;
  if (auth.state.status === 'signed-out') {
    return (
      <SignInForm
        title={TITLE}
        subtitle={`Version ${cfg.version} · ${cfg.model}`}
        notice={auth.state.notice}
        ssoLoginUrl={cfg.sso.enabled ? (cfg.sso.login_url ?? '/auth/sso/login') : undefined}
        onSignIn={auth.signIn}
      />
    );
  }

  return <Shell client={client} api={api} config={cfg} user={auth.state.user} onSignOut={auth.signOut} />;
}
