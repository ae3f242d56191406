import type { ReactNode } from 'react';
import type { ApiClient, CurrentUser } from '../api/api-client';
import { describeError } from '../api/api-error';
import { modelLabel } from '../ui/model-label';
import { useAsync } from '../ui/use-async';
import { SignInForm } from './sign-in-form';
import { useAuth } from './use-auth';

/** What the gate reads of an app's open configuration: the sign-in page shows the version and model, and links SSO. */
export interface GateConfig {
  version: string;
  model: string;
  llm_provider?: string;
  sso: { enabled: boolean; login_url?: string };
}

/** What an app shows once its configuration has loaded and someone has signed in. */
export interface SignedIn<C extends GateConfig> {
  config: C;
  user: CurrentUser;
  signOut: () => Promise<void>;
}

export interface SignedInGateProps<C extends GateConfig> {
  client: ApiClient;
  /** The product name, on the sign-in page and above a failure. */
  title: string;
  /** What is loading, for the splash screen: "the playground" reads "Loading the playground…". */
  loading: string;
  /** The app's open configuration endpoint. */
  loadConfig: (signal: AbortSignal) => Promise<C>;
  children: (session: SignedIn<C>) => ReactNode;
}

function Splash({ children }: { children: ReactNode }) {
  return (
    <main className="splash">
      <div className="splash__card">{children}</div>
    </main>
  );
}

/**
 * Every web app starts the same way: load its configuration and the saved sign-in together, offer a retry when the
 * service cannot be reached, show the sign-in form when nobody is signed in, and only then the app itself.
 */
export function SignedInGate<C extends GateConfig>({
  client,
  title,
  loading,
  loadConfig,
  children,
}: SignedInGateProps<C>) {
  const config = useAsync('config', loadConfig);
  const auth = useAuth(client);

  if (config.error !== undefined || auth.state.status === 'unreachable') {
    const message =
      auth.state.status === 'unreachable' ? auth.state.message : describeError(config.error ?? 'Unavailable');
    return (
      <Splash>
        <h1 className="splash__title">{title}</h1>
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
          <span className="spinner" aria-hidden="true" /> Loading {loading}…
        </p>
      </Splash>
    );
  }

  const cfg = config.data;
  if (auth.state.status === 'signed-out') {
    return (
      <SignInForm
        title={title}
        subtitle={`Version ${cfg.version} · ${modelLabel(cfg)}`}
        notice={auth.state.notice}
        ssoLoginUrl={cfg.sso.enabled ? (cfg.sso.login_url ?? '/auth/sso/login') : undefined}
        onSignIn={auth.signIn}
      />
    );
  }

  return children({ config: cfg, user: auth.state.user, signOut: auth.signOut });
}
