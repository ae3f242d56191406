import { useCallback, useEffect, useState } from 'react';
import type { ApiClient, CurrentUser } from '../api/api-client';
import { describeError } from '../api/api-error';

export type AuthState =
  | { status: 'checking' }
  | { status: 'unreachable'; message: string }
  | { status: 'signed-out'; notice?: string }
  | { status: 'signed-in'; user: CurrentUser };

export interface Auth {
  state: AuthState;
  /** Throws the server's error (wrong password, rate limit) for the form to show. */
  signIn: (username: string, password: string) => Promise<void>;
  signOut: () => Promise<void>;
  /** Checks again after the service could not be reached. */
  retry: () => void;
}

/** The sign-in state of an app: restored on load, lost when the service stops accepting the credentials. */
export function useAuth(client: ApiClient): Auth {
  const [state, setState] = useState<AuthState>({ status: 'checking' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    client.restore(controller.signal).then(
      (user) => setState(user ? { status: 'signed-in', user } : { status: 'signed-out' }),
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ status: 'unreachable', message: describeError(error) });
      },
    );
    return () => controller.abort();
  }, [client, attempt]);

  useEffect(
    () =>
      client.subscribe((credentials) => {
        if (credentials !== null) return;
        setState((current) =>
          current.status === 'signed-in'
            ? { status: 'signed-out', notice: 'Your sign-in has ended. Sign in again to continue.' }
            : current,
        );
      }),
    [client],
  );

  const signIn = useCallback(
    async (username: string, password: string) => {
      const user = await client.login(username, password);
      setState({ status: 'signed-in', user });
    },
    [client],
  );

  const signOut = useCallback(async () => {
    await client.logout();
    setState({ status: 'signed-out' });
  }, [client]);

  const retry = useCallback(() => {
    setState({ status: 'checking' });
    setAttempt((n) => n + 1);
  }, []);

  return { state, signIn, signOut, retry };
}

/** The user's stable identifier, whichever field name the deployment uses. */
export function userIdOf(user: CurrentUser): string | undefined {
  return user.user_id ?? user.id;
}
