export interface RelationTuplesTable {
  object_type: string;
  object_id: string;
  relation: string;
  subject_type: string;
  subject_id: string;
  /** '' for a plain subject; the relation of a userset such as group:eng#member. */
  subject_relation: string;
  created_at: string;
}
