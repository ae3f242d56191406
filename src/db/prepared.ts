import { type Compilable, CompiledQuery, type Kysely } from 'kysely';

/** Where a parameter of a prepared query goes: a value Kysely carries into the compiled parameters untouched. */
class Slot {
  constructor(readonly index: number) {}
}

/** The most values a prepared query takes. */
const MAX_ARGS = 16;

interface Compiled {
  sql: string;
  /** Per compiled parameter: the index of the argument that fills it, or the constant the query itself holds. */
  parameters: ({ arg: number } | { value: unknown })[];
}

/**
 * A query of a fixed shape whose Kysely form is built and compiled once per dialect, then run with each call's
 * values. Kysely builds an operation tree and compiles it to SQL on every call: on a hot route (the user behind a
 * token, their groups) that costs more than SQLite's answer. The SQL text is the same on every call, so the
 * statement cache (`statement-cache.ts`) reuses one compiled SQLite statement as well.
 *
 * `build` receives stand-ins for the arguments; it must use each only as a value of the query (compared, inserted,
 * limited by), never in its own logic, so that the query's shape is the same whatever the values.
 */
export function prepared<Db, Args extends unknown[], Row>(
  build: (db: Kysely<Db>, ...args: Args) => Compilable<Row>,
): (db: Kysely<Db>, ...args: Args) => Promise<Row[]> {
  // By the executor's adapter: one per dialect instance, shared by the transactions of its database.
  const compiled = new WeakMap<object, Compiled>();
  const compile = (db: Kysely<Db>): Compiled => {
    // A stand-in for every argument `build` could take: those it does not declare are ignored.
    const slots = Array.from({ length: MAX_ARGS }, (_, index) => new Slot(index));
    const query = build(db, ...(slots as unknown as Args)).compile();
    return {
      sql: query.sql,
      parameters: query.parameters.map((value) => (value instanceof Slot ? { arg: value.index } : { value })),
    };
  };
  return async (db, ...args) => {
    const adapter = db.getExecutor().adapter;
    let query = compiled.get(adapter);
    if (!query) compiled.set(adapter, (query = compile(db)));
    const parameters = query.parameters.map((p) => ('arg' in p ? args[p.arg] : p.value));
    const direct = directRunners.get(db);
    if (direct?.idle()) return direct.run(query.sql, parameters) as Row[];
    const result = await db.executeQuery(CompiledQuery.raw(query.sql, parameters));
    return result.rows as Row[];
  };
}

/** Runs a statement on a synchronous connection, when nothing else holds it. */
export interface DirectRunner {
  /** Whether no query or transaction of the Kysely handle holds the connection, or waits for it. */
  idle(): boolean;
  /** The rows of a reading statement; none for any other. */
  run(sql: string, parameters: readonly unknown[]): unknown[];
}

const directRunners = new WeakMap<object, DirectRunner>();

/**
 * Lets the prepared queries of a Kysely handle over a synchronous connection (SQLite) run there directly while the
 * connection is idle: Kysely takes the connection through its mutex, its connection provider and its driver, a
 * handful of promise steps for every statement, where the statement itself is one call. A query made while a
 * transaction holds the connection (or a query is on its way) waits its turn through Kysely as before; so does every
 * query of a transaction, whose handle is not this one.
 */
export function runDirectly(db: object, runner: DirectRunner): void {
  directRunners.set(db, runner);
}
