export interface AuditLogTable {
  id: string;
  type: string;
  /** A user id, `service_principal:<id>`, `anon:<keyed hash>` after erasure, or null for anonymous attempts. */
  actor_id: string | null;
  subject_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  /** JSON object of non-secret facts. */
  details: string;
  created_at: string;
}
