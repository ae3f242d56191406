import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuthorizationModel } from '@openfga/sdk';
import { transformer } from '@openfga/syntax-transformer';

/** The model's file, relative to the project root (found from here both in `src/` and in `dist/src/`). */
const MODEL_PATH = 'src/modules/authz/model.fga';

function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the authorization module');
    dir = parent;
  }
  return dir;
}

export function authorizationModelDsl(): string {
  return readFileSync(join(projectRoot(), MODEL_PATH), 'utf8');
}

/** The authorization model as OpenFGA's JSON (what `writeAuthorizationModel` takes and the evaluator reads). */
export function authorizationModel(): AuthorizationModel {
  return transformer.transformDSLToJSONObject(authorizationModelDsl()) as unknown as AuthorizationModel;
}
