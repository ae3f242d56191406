/**
 * The import fence: `npm run lint` fails when a file imports across a layer the wrong way.
 *
 *   composition (src/app.ts, src/main.ts, src/cli, src/compose)  may import anything
 *   wires       (transports/)                 → modules (their index), src/mcp, src/http, ports
 *   modules     (src/modules, src/mcp, tools/, workflows/) → other modules only through their index, ports,
 *               adapter ports, src/http plumbing, src/db
 *   ports       (src/ports, src/adapters/<x>/port.ts)  ← adapters (src/adapters) → src/db
 *   src/db      → table types and ports only; migrations → src/db only
 *
 * Shared plumbing every layer may use: src/errors.ts, src/logger.ts, src/lifecycle.ts, src/config.ts (types).
 */
const MODULES = '^(src/modules|src/mcp|tools|workflows)/';
const WIRES = '^transports/';
const COMPOSITION = '^src/(app|main)\\.ts$|^src/(cli|compose)/';
const ADAPTER_IMPLEMENTATIONS = '^src/adapters/(?!.*/port\\.ts$)';
const TABLES = '(\\.tables|/tables)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Import cycles make start-up order and module boundaries impossible to reason about.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'nothing-imports-composition',
      comment: 'Only the composition root knows every part; nothing may reach back into it.',
      severity: 'error',
      from: { pathNot: COMPOSITION },
      to: { path: COMPOSITION },
    },
    {
      name: 'nothing-below-wires-imports-wires',
      comment: 'Wires (transports) parse, call a service and render; nothing else may depend on them.',
      severity: 'error',
      from: { pathNot: `${WIRES}|${COMPOSITION}` },
      to: { path: WIRES },
    },
    {
      name: 'module-internals-stay-inside',
      comment: "A module is used through its public index (src/modules/<name>/index.ts), never another module's files.",
      severity: 'error',
      from: { path: '^(src/modules/[^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'outside-code-uses-module-index',
      comment: 'Code outside the modules uses a module through its public index (table types excepted, for src/db).',
      severity: 'error',
      from: { pathNot: `^src/modules/|${COMPOSITION}|^src/db/` },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'modules-depend-on-ports-not-adapters',
      comment: 'Modules and wires depend on ports; the composition root picks the adapter.',
      severity: 'error',
      from: { path: `${MODULES}|${WIRES}` },
      to: { path: ADAPTER_IMPLEMENTATIONS },
    },
    {
      name: 'adapters-below-modules',
      comment: 'Adapters implement ports; they never reach up into modules, the MCP core, wires or HTTP plumbing.',
      severity: 'error',
      from: { path: '^src/adapters/' },
      to: { path: `${MODULES}|${WIRES}|^src/http/` },
    },
    {
      name: 'ports-are-leaves',
      comment:
        'Ports are shared contracts: they may name other ports, the database schema type and shared plumbing types, ' +
        'nothing that runs.',
      severity: 'error',
      from: { path: '^src/ports/|^src/adapters/[^/]+/port\\.ts$' },
      to: { path: `${MODULES}|${WIRES}|${ADAPTER_IMPLEMENTATIONS}|^src/db/`, pathNot: '^src/db/database\\.ts$' },
    },
    {
      name: 'db-knows-only-tables',
      comment: 'The database layer gathers table types and implements ports; it depends on nothing above it.',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: `${MODULES}|${WIRES}|^src/(adapters|http)/`, pathNot: TABLES },
    },
    {
      name: 'http-plumbing-below-modules',
      comment: 'src/http is express plumbing (routes, authentication, errors, OpenAPI): it knows no module.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: `${MODULES}|${WIRES}|${ADAPTER_IMPLEMENTATIONS}` },
    },
    {
      name: 'migrations-stand-alone',
      comment: 'A migration must run the same forever: it uses the database layer only, never live code.',
      severity: 'error',
      from: { path: '^migrations/' },
      to: { path: '^(src|transports|tools|workflows)/', pathNot: '^src/db/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
