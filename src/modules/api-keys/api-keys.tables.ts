export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  /** SHA-256 (hex) of the key; the key itself is shown once and never stored. */
  key_hash: string;
  generation: number;
  created_at: string;
  expires_at: string;
  last_used: string | null;
}
