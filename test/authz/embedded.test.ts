import { createEmbeddedAuthz } from '../../src/adapters/authz/embedded.js';
import { createDb } from '../../src/db/create-db.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { authorizationModel } from '../../src/modules/authz/model.js';
import { authzContract } from '../contracts/authz.contract.js';
import { DIALECTS } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';

const model = authorizationModel();

for (const dialect of DIALECTS) {
  describeWithService(`embedded evaluator on ${dialect.name}`, dialect.availability, () => {
    authzContract(`embedded (${dialect.name})`, async () => {
      const database = await dialect.create();
      const db = createDb(database.target);
      await migrateToLatest(db);
      return {
        authz: createEmbeddedAuthz(db, model),
        cleanup: async () => {
          await db.destroy();
          await database.cleanup();
        },
      };
    });
  });
}
