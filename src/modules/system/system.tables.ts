/** Key/value facts about this installation (its id, when it was first started). */
export interface SystemSettingsTable {
  key: string;
  value: string;
  updated_at: string;
}
