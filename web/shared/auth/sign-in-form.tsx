import { useId, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { describeError } from '../api/api-error';

export interface SignInFormProps {
  /** The product name shown above the form. */
  title: string;
  /** A line under the title, e.g. the version or the model. */
  subtitle?: ReactNode;
  /** Shown before the form, e.g. why the previous sign-in ended. */
  notice?: string;
  /** Where "Sign in with SSO" leads, when single sign-on is configured. */
  ssoLoginUrl?: string;
  onSignIn: (username: string, password: string) => Promise<void>;
}

/** Username and password, plus the single sign-on link when the deployment has one. */
export function SignInForm({ title, subtitle, notice, ssoLoginUrl, onSignIn }: SignInFormProps) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const passwordRef = useRef<HTMLInputElement>(null);
  const headingId = useId();
  const errorId = useId();

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    if (!username.trim() || !password) {
      setError('Enter your username and password.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await onSignIn(username.trim(), password);
    } catch (failure) {
      setError(describeError(failure));
      setPassword('');
      passwordRef.current?.focus();
      setBusy(false);
    }
  }

  return (
    <main className="sign-in">
      <section className="sign-in__card" aria-labelledby={headingId}>
        <h1 id={headingId} className="sign-in__title">
          {title}
        </h1>
        {subtitle ? <p className="sign-in__subtitle">{subtitle}</p> : null}
        {notice && !error ? (
          <p className="notice" role="status">
            {notice}
          </p>
        ) : null}
        <form className="sign-in__form" onSubmit={(event) => void submit(event)} noValidate>
          <div className="field">
            <label htmlFor={`${headingId}-username`}>Username</label>
            <input
              id={`${headingId}-username`}
              name="username"
              autoComplete="username"
              autoCapitalize="none"
              spellCheck={false}
              required
              autoFocus
              value={username}
              onChange={(event) => setUsername(event.target.value)}
              aria-describedby={error ? errorId : undefined}
            />
          </div>
          <div className="field">
            <label htmlFor={`${headingId}-password`}>Password</label>
            <input
              ref={passwordRef}
              id={`${headingId}-password`}
              name="password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(event) => setPassword(event.target.value)}
              aria-describedby={error ? errorId : undefined}
            />
          </div>
          {error ? (
            <p id={errorId} className="form-error" role="alert">
              {error}
            </p>
          ) : null}
          <button type="submit" className="button button--primary button--block" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        {ssoLoginUrl ? (
          <>
            <p className="sign-in__divider">
              <span>or</span>
            </p>
            <a className="button button--block" href={ssoLoginUrl}>
              Sign in with SSO
            </a>
          </>
        ) : null}
      </section>
    </main>
  );
}
