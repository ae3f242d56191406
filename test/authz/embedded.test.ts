import { cachingDecisions } from '../../src/adapters/authz/cached.js';
import { createEmbeddedAuthz } from '../../src/adapters/authz/embedded.js';
import type { AuthzService } from '../../src/adapters/authz/port.js';
import { createDb } from '../../src/db/create-db.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { authorizationModel } from '../../src/modules/authz/model.js';
import { authzContract } from '../contracts/authz.contract.js';
import { DIALECTS } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';

const model = authorizationModel();

for (const dialect of DIALECTS) {
  describeWithService(`embedded evaluator on ${dialect.name}`, dialect.availability, () => {
    const subject = (wrap: (authz: AuthzService) => AuthzService) => async () => {
      const database = await dialect.createMigrated();
      const db = createDb(database.target);
      await migrateToLatest(db);
      return {
        authz: wrap(createEmbeddedAuthz(db, model)),
        cleanup: async () => {
          await db.destroy();
          await database.cleanup();
        },
      };
    };
    authzContract(
      `embedded (${dialect.name})`,
      subject((authz) => authz),
    );
    // The decision cache in front of it must not change one answer: every write clears what it remembered.
    authzContract(
      `embedded (${dialect.name}) behind the decision cache`,
      subject((authz) => cachingDecisions(authz, { ttlMs: 60_000 })),
    );
  });
}
