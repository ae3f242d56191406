/** The purposes a user can grant or withdraw consent for (spec "Consent types"). */
export const CONSENT_TYPES = ['analytics', 'marketing', 'third_party', 'profiling'] as const;
export type ConsentType = (typeof CONSENT_TYPES)[number];

/** One consent decision; a user's decisions are a history, the latest per type being in force. */
export interface ConsentsTable {
  id: string;
  user_id: string;
  /** Order of the user's decisions (1, 2, …). */
  seq: number;
  consent_type: ConsentType;
  granted: number;
  ip_address: string | null;
  user_agent: string | null;
  created_at: string;
}

export interface UserPreferencesTable {
  user_id: string;
  /** JSON object. */
  preferences: string;
  updated_at: string;
}
