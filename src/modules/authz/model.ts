import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuthorizationModel } from '@openfga/sdk';
import type * as SyntaxTransformer from '@openfga/syntax-transformer';

/** The model's file, relative to the project root (found from here both in `src/` and in `dist/src/`). */
const MODEL_PATH = 'src/modules/authz/model.fga';
/**
 * The model as OpenFGA's JSON, with the digest of the DSL it was made from (`test/authz/model.test.ts` keeps it in
 * step with the DSL; `vitest -u` rewrites it). It spares the service OpenFGA's DSL parser at start-up: the parser
 * and the ANTLR runtime under it cost several MB of memory for as long as the process lives.
 */
const COMPILED_PATH = 'src/modules/authz/model.json';

/** What `model.json` holds. */
export interface CompiledAuthorizationModel {
  /** SHA-256 of the DSL, in hex. */
  dsl_sha256: string;
  model: AuthorizationModel;
}

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

const digestOf = (dsl: string) => createHash('sha256').update(dsl).digest('hex');

let transformer: typeof SyntaxTransformer.transformer | undefined;
/** OpenFGA's DSL parser, loaded the first time a DSL has to be parsed (it is CommonJS, so it loads synchronously). */
function dslTransformer(): typeof SyntaxTransformer.transformer {
  if (!transformer) {
    const syntax = createRequire(import.meta.url)('@openfga/syntax-transformer') as typeof SyntaxTransformer;
    transformer = syntax.transformer;
  }
  return transformer;
}

/** The DSL turned into OpenFGA's JSON by OpenFGA's own parser, with the DSL's digest: what `model.json` must hold. */
export function compileAuthorizationModel(dsl = authorizationModelDsl()): CompiledAuthorizationModel {
  return {
    dsl_sha256: digestOf(dsl),
    model: dslTransformer().transformDSLToJSONObject(dsl) as unknown as AuthorizationModel,
  };
}

function compiledFor(dsl: string): AuthorizationModel | undefined {
  try {
    const compiled = JSON.parse(
      readFileSync(join(projectRoot(), COMPILED_PATH), 'utf8'),
    ) as Partial<CompiledAuthorizationModel>;
    return compiled.dsl_sha256 === digestOf(dsl) ? compiled.model : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The authorization model as OpenFGA's JSON (what `writeAuthorizationModel` takes and the evaluator reads): the
 * compiled copy while it was made from the DSL as it stands, else the DSL parsed now.
 */
export function authorizationModel(): AuthorizationModel {
  const dsl = authorizationModelDsl();
  return compiledFor(dsl) ?? compileAuthorizationModel(dsl).model;
}
