export type AuthenticationMode = 'client_credentials' | 'service_account_user';

export interface ServicePrincipalsTable {
  /** The service_id: a slug of the name. */
  id: string;
  name: string;
  description: string;
  authentication_mode: AuthenticationMode;
  owner_user_id: string;
  associated_user_id: string | null;
  inherit_permissions: number;
  enabled: number;
  /** SHA-256 (hex) of the client secret. */
  secret_hash: string;
  /** Bumped on rotation: tokens issued under an older generation stop working once its secret does. */
  secret_generation: number;
  previous_secret_hash: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}
