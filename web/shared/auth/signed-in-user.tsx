import { useState } from 'react';
import type { CurrentUser } from '../api/api-client';

/**
 * The signed-in user's name and the sign-out button at the end of an app's top bar. The button stays disabled once
 * pressed, since signing out ends with the app showing the sign-in form and a second press has nothing to do.
 */
export function SignedInUser({ user, onSignOut }: { user: CurrentUser; onSignOut: () => Promise<void> }) {
  const [signingOut, setSigningOut] = useState(false);
  return (
    <>
      <span className="topbar__user" title={user.email ?? user.username}>
        {user.username}
      </span>
      <button
        type="button"
        className="button button--ghost"
        disabled={signingOut}
        onClick={() => {
          setSigningOut(true);
          void onSignOut();
        }}
      >
        Sign out
      </button>
    </>
  );
}
