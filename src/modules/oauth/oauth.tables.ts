export interface OAuthClientsTable {
  client_id: string;
  /** RFC 7591 client metadata as registered (JSON). */
  metadata: string;
  /** SHA-256 (hex) of the client secret; null for public clients (`token_endpoint_auth_method: none`). */
  secret_hash: string | null;
  created_at: string;
}

export interface OAuthGrantsTable {
  id: string;
  client_id: string;
  user_id: string;
  /** Space-separated scopes the user approved. */
  scope: string;
  /** The resource (RFC 8707) the grant's tokens are bound to. */
  resource: string;
  created_at: string;
  last_used_at: string | null;
}

export interface OAuthCodesTable {
  code_hash: string;
  grant_id: string;
  client_id: string;
  redirect_uri: string;
  /** PKCE S256 challenge. */
  code_challenge: string;
  expires_at: string;
  used_at: string | null;
}

export interface OAuthRefreshTokensTable {
  token_hash: string;
  grant_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}
