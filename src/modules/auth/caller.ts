/**
 * Who is making a request, as the authentication middleware established it. Every protected route of every
 * listener sees the same shape, whichever credential was presented.
 */
export interface Caller {
  /** A person, or a non-human identity (service principal). */
  kind: 'user' | 'service';
  /** User id (UUID) or service principal id. */
  id: string;
  username: string;
  roles: string[];
  /** The login session behind the credential; undefined for credentials without one (API keys). */
  sessionId: string | undefined;
  /** Which credential was presented. */
  via: 'bearer' | 'cookie' | 'api_key' | 'stdio';
  /** When the credential stops working (epoch seconds), if it expires. */
  expiresAt?: number;
}
