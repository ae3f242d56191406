import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthzService } from '../../src/adapters/authz/port.js';

/**
 * What every authorization service must do with the model in src/modules/authz/model.fga: direct, group-derived,
 * computed, wildcard and inherited (acts_as) permissions, revocation, cycles, reads and listing.
 */
export function authzContract(
  name: string,
  make: () => Promise<{ authz: AuthzService; cleanup: () => Promise<void> }>,
): void {
  describe(`authorization contract: ${name}`, () => {
    let authz: AuthzService;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ authz, cleanup } = await make());
    });
    afterEach(async () => {
      await cleanup();
    });

    it('grants what a direct tuple grants, and nothing else', async () => {
      await authz.write([{ user: 'user:alice', relation: 'executor', object: 'tool:chat' }]);
      expect(await authz.check('user:alice', 'executor', 'tool:chat')).toBe(true);
      expect(await authz.check('user:bob', 'executor', 'tool:chat')).toBe(false);
      expect(await authz.check('user:alice', 'executor', 'tool:search_web')).toBe(false);
      expect(await authz.check('user:alice', 'owner', 'conversation:c1')).toBe(false);
    });

    it('writes and deletes idempotently, and a deleted tuple grants nothing', async () => {
      const tuple = { user: 'user:alice', relation: 'owner', object: 'conversation:c1' };
      await authz.write([tuple]);
      await authz.write([tuple]);
      expect(await authz.read({ object: 'conversation:c1' })).toEqual([tuple]);
      await authz.delete([tuple]);
      await authz.delete([tuple]);
      expect(await authz.check('user:alice', 'owner', 'conversation:c1')).toBe(false);
      expect(await authz.read({ object: 'conversation:c1' })).toEqual([]);
    });

    it('derives permissions from group membership, including nested groups, and revokes them with it', async () => {
      await authz.write([
        { user: 'group:eng#member', relation: 'executor', object: 'tool:chat' },
        { user: 'group:backend#member', relation: 'member', object: 'group:eng' },
        { user: 'user:carol', relation: 'member', object: 'group:backend' },
      ]);
      expect(await authz.check('user:carol', 'executor', 'tool:chat')).toBe(true);
      expect(await authz.check('user:carol', 'member', 'group:eng')).toBe(true);
      expect(await authz.check('user:dave', 'executor', 'tool:chat')).toBe(false);
      await authz.delete([{ user: 'user:carol', relation: 'member', object: 'group:backend' }]);
      expect(await authz.check('user:carol', 'executor', 'tool:chat')).toBe(false);
    });

    it('grants through roles and computed relations (viewer ⊇ executor, provisioner ⊇ admin)', async () => {
      await authz.write([
        { user: 'role:admin#assignee', relation: 'admin', object: 'system:global' },
        { user: 'user:erin', relation: 'assignee', object: 'role:admin' },
        { user: 'user:frank', relation: 'executor', object: 'tool:chat' },
      ]);
      expect(await authz.check('user:erin', 'admin', 'system:global')).toBe(true);
      expect(await authz.check('user:erin', 'provisioner', 'system:global')).toBe(true);
      expect(await authz.check('user:frank', 'viewer', 'tool:chat')).toBe(true);
      expect(await authz.check('user:frank', 'provisioner', 'system:global')).toBe(false);
    });

    it('grants every user through a wildcard, but not other kinds of subject', async () => {
      await authz.write([{ user: 'user:*', relation: 'executor', object: 'tool:search_web' }]);
      expect(await authz.check('user:anyone', 'executor', 'tool:search_web')).toBe(true);
      expect(await authz.check('service_principal:bot', 'executor', 'tool:search_web')).toBe(false);
    });

    it('gives a service principal that acts as a user that user’s permissions, until the link is removed', async () => {
      await authz.write([
        { user: 'user:alice', relation: 'owner', object: 'conversation:c1' },
        { user: 'group:eng#member', relation: 'executor', object: 'tool:chat' },
        { user: 'user:alice', relation: 'member', object: 'group:eng' },
        { user: 'user:alice', relation: 'acts_as', object: 'service_principal:bot' },
      ]);
      expect(await authz.check('service_principal:bot', 'viewer', 'conversation:c1')).toBe(true);
      expect(await authz.check('service_principal:bot', 'executor', 'tool:chat')).toBe(true);
      expect(await authz.check('service_principal:other', 'executor', 'tool:chat')).toBe(false);
      await authz.delete([{ user: 'user:alice', relation: 'acts_as', object: 'service_principal:bot' }]);
      expect(await authz.check('service_principal:bot', 'viewer', 'conversation:c1')).toBe(false);
    });

    it('terminates on cyclic group membership', async () => {
      await authz.write([
        { user: 'group:a#member', relation: 'member', object: 'group:b' },
        { user: 'group:b#member', relation: 'member', object: 'group:a' },
        { user: 'user:gina', relation: 'member', object: 'group:a' },
        { user: 'group:b#member', relation: 'executor', object: 'tool:chat' },
      ]);
      expect(await authz.check('user:gina', 'executor', 'tool:chat')).toBe(true);
      expect(await authz.check('user:hank', 'executor', 'tool:chat')).toBe(false);
    });

    it('reads by object, object type, relation and user', async () => {
      const tuples = [
        { user: 'user:alice', relation: 'owner', object: 'conversation:c1' },
        { user: 'user:alice', relation: 'owner', object: 'conversation:c2' },
        { user: 'user:bob', relation: 'viewer', object: 'conversation:c1' },
        { user: 'group:eng#member', relation: 'executor', object: 'tool:chat' },
      ];
      await authz.write(tuples);
      expect(await authz.read({ object: 'conversation:' })).toHaveLength(3);
      expect(await authz.read({ object: 'conversation:c1', relation: 'viewer' })).toEqual([tuples[2]]);
      expect(await authz.read({ user: 'user:alice', relation: 'owner', object: 'conversation:' })).toEqual(
        tuples.slice(0, 2),
      );
      expect(await authz.read({ user: 'group:eng#member', relation: 'executor', object: 'tool:' })).toEqual([
        tuples[3],
      ]);
    });

    it('lists the objects of a type a user has a relation to', async () => {
      await authz.write([
        { user: 'user:alice', relation: 'owner', object: 'conversation:c1' },
        { user: 'group:eng#member', relation: 'viewer', object: 'conversation:c2' },
        { user: 'user:alice', relation: 'member', object: 'group:eng' },
        { user: 'user:bob', relation: 'owner', object: 'conversation:c3' },
      ]);
      expect((await authz.listObjects('user:alice', 'viewer', 'conversation')).sort()).toEqual([
        'conversation:c1',
        'conversation:c2',
      ]);
      expect(await authz.listObjects('user:alice', 'owner', 'conversation')).toEqual(['conversation:c1']);
    });

    it('removes every tuple naming an entity, as object, as user and inside usersets', async () => {
      await authz.write([
        { user: 'user:alice', relation: 'member', object: 'group:eng' },
        { user: 'group:eng#member', relation: 'executor', object: 'tool:chat' },
        { user: 'user:bob', relation: 'member', object: 'group:ops' },
        { user: 'user:alice', relation: 'owner', object: 'conversation:c1' },
      ]);
      expect(await authz.removeAllFor('group:eng')).toBe(2);
      expect(await authz.check('user:alice', 'executor', 'tool:chat')).toBe(false);
      expect(await authz.removeAllFor('user:alice')).toBe(1);
      expect(await authz.read({})).toEqual([{ user: 'user:bob', relation: 'member', object: 'group:ops' }]);
    });

    it('refuses a relation the model does not define', async () => {
      await expect(authz.write([{ user: 'user:alice', relation: 'janitor', object: 'tool:chat' }])).rejects.toThrow();
    });
  });
}
