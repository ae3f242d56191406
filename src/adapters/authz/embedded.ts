import type { AuthorizationModel } from '@openfga/sdk';
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Db } from '../../db/create-db.js';
import type { Database } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { RelationTuplesTable } from './tables.js';
import { Evaluator, type TupleReader, splitObject } from './evaluator.js';
import { embeddedAuthzHealthCheck } from './health.js';
import type { AuthzService, Tuple, TupleFilter } from './port.js';

type TupleRow = Omit<RelationTuplesTable, 'created_at'>;

/** The row of exactly this tuple (every column of the primary key). */
const sameTuple = (row: TupleRow) => (eb: ExpressionBuilder<Database, 'relation_tuples'>) =>
  eb.and([
    eb('object_type', '=', row.object_type),
    eb('object_id', '=', row.object_id),
    eb('relation', '=', row.relation),
    eb('subject_type', '=', row.subject_type),
    eb('subject_id', '=', row.subject_id),
    eb('subject_relation', '=', row.subject_relation),
  ]);

function toRow(tuple: Tuple): TupleRow {
  const object = splitObject(tuple.object);
  const subject = splitObject(tuple.user);
  return {
    object_type: object.type,
    object_id: object.id,
    relation: tuple.relation,
    subject_type: subject.type,
    subject_id: subject.id,
    subject_relation: subject.relation ?? '',
  };
}

function fromRow(row: TupleRow): Tuple {
  const user = `${row.subject_type}:${row.subject_id}${row.subject_relation ? `#${row.subject_relation}` : ''}`;
  return { user, relation: row.relation, object: `${row.object_type}:${row.object_id}` };
}

/** Whether this exact tuple is stored (every column of the primary key). */
const findTuple = prepared(
  (
    db: Kysely<Database>,
    objectType: string,
    objectId: string,
    relation: string,
    subjectType: string,
    subjectId: string,
    subjectRelation: string,
  ) =>
    db
      .selectFrom('relation_tuples')
      .select('relation')
      .where('object_type', '=', objectType)
      .where('object_id', '=', objectId)
      .where('relation', '=', relation)
      .where('subject_type', '=', subjectType)
      .where('subject_id', '=', subjectId)
      .where('subject_relation', '=', subjectRelation)
      .limit(1),
);

/** The tuples that give `relation` on one object, to whoever they name. */
const tuplesOn = prepared((db: Kysely<Database>, type: string, id: string, relation: string) =>
  db
    .selectFrom('relation_tuples')
    .selectAll()
    .where('object_type', '=', type)
    .where('object_id', '=', id)
    .where('relation', '=', relation),
);

/**
 * The embedded authorization service: tuples in the service's own database, checks evaluated in-process
 * against the same model an OpenFGA store would hold.
 */
export function createEmbeddedAuthz(
  db: Db,
  model: AuthorizationModel,
  now: () => Date = () => new Date(),
): AuthzService {
  const kysely = db.kysely;
  const reader: TupleReader = {
    async has(tuple) {
      const row = toRow(tuple);
      const found = await findTuple(
        kysely,
        row.object_type,
        row.object_id,
        row.relation,
        row.subject_type,
        row.subject_id,
        row.subject_relation,
      );
      return found.length > 0;
    },
    async usersOf(object, relation) {
      const { type, id } = splitObject(object);
      const rows = await tuplesOn(kysely, type, id, relation);
      return rows.map((row) => fromRow(row).user);
    },
  };
  const evaluator = new Evaluator(model, reader);

  const validate = (tuple: Tuple) => {
    const { type } = splitObject(tuple.object);
    if (!evaluator.defines(type, tuple.relation))
      throw new Error(`The model defines no relation ${tuple.relation} on ${type}`);
  };

  return {
    provider: 'embedded',
    check: (user, relation, object) => evaluator.check(user, relation, object),

    async write(tuples) {
      if (tuples.length === 0) return;
      tuples.forEach(validate);
      const createdAt = now().toISOString();
      await kysely
        .insertInto('relation_tuples')
        .values(tuples.map((t) => ({ ...toRow(t), created_at: createdAt })))
        .onConflict((oc) => oc.doNothing())
        .execute();
    },

    async delete(tuples) {
      for (const tuple of tuples) {
        await kysely
          .deleteFrom('relation_tuples')
          .where(sameTuple(toRow(tuple)))
          .execute();
      }
    },

    async read(filter: TupleFilter) {
      let query = kysely.selectFrom('relation_tuples').selectAll();
      if (filter.object) {
        const [type, id] = [
          filter.object.slice(0, filter.object.indexOf(':')),
          filter.object.slice(filter.object.indexOf(':') + 1),
        ];
        query = query.where('object_type', '=', type);
        if (id) query = query.where('object_id', '=', id);
      }
      if (filter.relation) query = query.where('relation', '=', filter.relation);
      if (filter.user) {
        const subject = splitObject(filter.user);
        query = query
          .where('subject_type', '=', subject.type)
          .where('subject_id', '=', subject.id)
          .where('subject_relation', '=', subject.relation ?? '');
      }
      const rows = await query.orderBy('object_type').orderBy('object_id').orderBy('relation').execute();
      return rows.map(fromRow);
    },

    async listObjects(user, relation, type) {
      const candidates = await kysely
        .selectFrom('relation_tuples')
        .select('object_id')
        .distinct()
        .where('object_type', '=', type)
        .execute();
      const allowed: string[] = [];
      for (const { object_id } of candidates) {
        const object = `${type}:${object_id}`;
        if (await evaluator.check(user, relation, object)) allowed.push(object);
      }
      return allowed.sort();
    },

    async removeAllFor(entity) {
      const { type, id } = splitObject(entity);
      const result = await kysely
        .deleteFrom('relation_tuples')
        .where((eb) =>
          eb.or([
            eb.and([eb('object_type', '=', type), eb('object_id', '=', id)]),
            eb.and([eb('subject_type', '=', type), eb('subject_id', '=', id)]),
          ]),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    healthCheck: () => embeddedAuthzHealthCheck(db),
  };
}
