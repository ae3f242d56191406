import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * Every statement that changes or deletes a user-owned row names the owner in its own WHERE (STYLE.md "Owner-scoped
 * data"): a check in the service followed by a statement keyed by id alone is how a stranger's request ends up
 * changing someone's data. This reads the source for every `updateTable` / `deleteFrom` on an owned table and
 * checks that its chain names the owner; the few that do not by design are listed below with the reason.
 */

const ROOT = resolve(import.meta.dirname, '../..');

/** Tables whose rows belong to a user (or a client, or a workflow the caller was admitted to), and what scopes them. */
const OWNED: Record<string, RegExp> = {
  api_keys: /'user_id'/,
  refresh_tokens: /'user_id'/,
  consents: /'user_id'/,
  user_preferences: /'user_id'/,
  playground_sessions: /'user_id'/,
  // A session's children are reached through the owner's session (`ownedSession`, or the user's sessions).
  playground_messages: /\bowned\b|ownedSession\(/,
  playground_spans: /\bowned\b|ownedSession\(/,
  playground_logs: /\bowned\b|ownedSession\(/,
  conversations: /'owner'/,
  messages: /\bowned\b/,
  service_principals: /'owner_user_id'/,
  mcp_tasks: /'owner'/,
  // A grant is its user's (their grant list) and its client's (the token endpoint).
  oauth_grants: /'user_id'|'client_id'|scope\.column/,
  // Codes and refresh tokens are found by the hash of what the client presents: the secret is the scope.
  oauth_codes: /'code_hash'/,
  oauth_refresh_tokens: /'token_hash'/,
  workflows: /'owner'/,
  // What hangs off a workflow is reached only through the workflow the caller was admitted to.
  workflow_versions: /'workflow_id'/,
  workflow_tags: /'workflow_id'/,
  workflow_runs: /'workflow_id'/,
  // What a run showed goes with its workflow's runs, or with the runs its starter started (their erasure).
  workflow_run_events: /'workflow_id'|'started_by'/,
  // A connection is its owner's ('' for a shared one, which administrators manage).
  mcp_connections: /'owner_id'/,
  // Or through the connection its owner administers (`ownedConnection`).
  mcp_connection_accounts: /'user_id'|ownedConnection\(/,
  // A connection's pinned tools are reached only through the connection the caller was admitted to.
  mcp_connection_tools: /'connection_id'/,
  // A sign-in in progress is found by its state, which only its user's browser holds.
  mcp_connection_sign_ins: /'state'|'user_id'|ownedConnection\(/,
};

/** Tables no caller owns: the installation's, administered by administrators, SCIM or the service itself. */
const ADMINISTERED = [
  /^users$/,
  /^user_identities$/,
  /^groups$/,
  /^group_members$/,
  /^scim_/,
  /^signing_keys$/,
  /^relation_tuples$/,
  /^audit_log$/,
  /^oauth_clients$/,
  /^system_settings$/,
];

/** Writes on owned tables that name no owner, by design: `file:function` → why. */
const UNSCOPED_BY_DESIGN: Record<string, string> = {
  'src/modules/api-keys/api-keys.store.ts:recordKeyUse': 'the time of use of the key whose secret was just presented',
  'src/modules/conversations/conversations.service.ts:append':
    'conversations are reached by relationship tuples (a principal may act for the owner); callers pass one `access` admitted as owner',
  'src/modules/builder/builder.store.ts:appendVersion':
    'workflows are shared by tuples; the service admitted an editor',
  'src/modules/builder/builder.store.ts:setToolName': 'workflows are shared by tuples; the service admitted an editor',
  'src/modules/builder/builder.store.ts:deleteWorkflow':
    'workflows are shared by tuples; the service admitted the owner',
  'src/mcp/tasks.ts:#renew': "a system step: renews this instance's claims on the tasks it runs",
  'src/mcp/tasks.ts:prune': 'a system sweep of expired tasks',
};

interface Write {
  table: string;
  site: string;
  chain: string;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

/** The name of the function or method a position of `text` sits in: the nearest declaration above, at most indented by two. */
function enclosingFunction(text: string, at: number): string {
  const lines = text.slice(0, at).split('\n').reverse();
  for (const line of lines) {
    const found =
      /^ {0,2}(?:export\s+)?(?:async\s+)?(?:function\s*\*?\s+)?(?:\*\s*)?(#?[A-Za-z_]\w*)\s*(?:<[^>]*>)?\(/.exec(line);
    if (found && !['if', 'for', 'while', 'return', 'await', 'const', 'let'].includes(found[1]!)) return found[1]!;
  }
  return '(top level)';
}

function writes(): Write[] {
  const found: Write[] = [];
  for (const path of sourceFiles(join(ROOT, 'src'))) {
    const text = readFileSync(path, 'utf8');
    for (const match of text.matchAll(/\.(?:deleteFrom|updateTable)\(\s*'([a-z_]+)'/g)) {
      const rest = text.slice(match.index);
      // The statement's chain: up to where it runs, or the end of the statement it is built in.
      const end = rest.search(/\.execute|;\s*$/m);
      found.push({
        table: match[1]!,
        site: `${relative(ROOT, path)}:${enclosingFunction(text, match.index)}`,
        chain: end < 0 ? rest : rest.slice(0, end),
      });
    }
  }
  return found;
}

describe('owner-scoped writes', () => {
  const all = writes();

  it('finds the statements it checks', () => {
    // A scan that silently matched nothing would pass whatever the code did.
    expect(all.filter((w) => w.table === 'playground_messages').length).toBeGreaterThanOrEqual(2);
    expect(all.length).toBeGreaterThan(30);
  });

  it('every update or delete on an owned table names the owner in its own WHERE, or is listed with its reason', () => {
    const unscoped = all
      .filter((w) => OWNED[w.table] !== undefined && !OWNED[w.table]!.test(w.chain))
      .map((w) => w.site)
      .filter((site) => UNSCOPED_BY_DESIGN[site] === undefined);
    expect(unscoped).toEqual([]);
  });

  it('knows every table written to as owned or administered', () => {
    const unknown = all
      .map((w) => w.table)
      .filter((table) => OWNED[table] === undefined && !ADMINISTERED.some((pattern) => pattern.test(table)));
    expect([...new Set(unknown)]).toEqual([]);
  });

  it('lists no exception that no longer exists', () => {
    const sites = new Set(all.map((w) => w.site));
    expect(Object.keys(UNSCOPED_BY_DESIGN).filter((site) => !sites.has(site))).toEqual([]);
  });
});
