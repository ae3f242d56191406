import { transformer, validator } from '@openfga/syntax-transformer';
import { describe, expect, it } from 'vitest';
import { authorizationModel, authorizationModelDsl, compileAuthorizationModel } from '../../src/modules/authz/model.js';

/** The types and relations the service writes and checks; the model may grow, but must keep these. */
const RELIED_ON: Record<string, string[]> = {
  user: [],
  group: ['member'],
  role: ['assignee'],
  system: ['admin', 'provisioner'],
  tool: ['executor', 'viewer'],
  conversation: ['owner', 'viewer'],
  service_principal: ['owner', 'acts_as'],
  workflow: ['owner', 'editor', 'viewer', 'executor'],
};

describe('authorization model (src/modules/authz/model.fga)', () => {
  const dsl = authorizationModelDsl();

  it('passes the official OpenFGA DSL validator', () => {
    expect(() => validator.validateDSL(dsl)).not.toThrow();
  });

  it('round-trips through OpenFGA JSON and back to the same model', () => {
    const json = JSON.parse(transformer.transformDSLToJSON(dsl)) as unknown;
    const again = transformer.transformJSONToDSL(transformer.transformDSLToJSONObject(dsl));
    expect(() => validator.validateDSL(again)).not.toThrow();
    expect(JSON.parse(transformer.transformDSLToJSON(again))).toEqual(json);
    expect(authorizationModel()).toEqual(json);
  });

  // The service reads the compiled copy instead of parsing the DSL at start-up; after changing model.fga, rewrite it
  // with `npx vitest run -u test/authz/model.test.ts`.
  it('ships model.json compiled from model.fga as it stands', async () => {
    await expect(`${JSON.stringify(compileAuthorizationModel(dsl), null, 2)}\n`).toMatchFileSnapshot(
      '../../src/modules/authz/model.json',
    );
  });

  it('defines every type and relation the service relies on', () => {
    const relations = new Map(
      authorizationModel().type_definitions.map((type) => [type.type, Object.keys(type.relations ?? {})]),
    );
    for (const [type, needed] of Object.entries(RELIED_ON)) {
      expect(relations.get(type), type).toEqual(expect.arrayContaining(needed));
    }
  });

  it('lets only users be acted as, so acts_as inheritance stays one level deep', () => {
    const principal = authorizationModel().type_definitions.find((type) => type.type === 'service_principal');
    expect(principal?.metadata?.relations?.acts_as?.directly_related_user_types).toEqual([{ type: 'user' }]);
  });
});
