export interface SigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: string;
  private_jwk: string;
  created_at: string;
  /** Set when a newer key took over signing; the key still verifies until its tokens have expired. */
  retired_at: string | null;
}

export interface RefreshTokensTable {
  id: string;
  /** SHA-256 (hex) of the opaque token. */
  token_hash: string;
  /** The login session (token family) the token belongs to. */
  session_id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  /** Set when the token was exchanged; presenting it again revokes the whole family. */
  used_at: string | null;
}
