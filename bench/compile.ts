import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The baseline servers are TypeScript, but run as plain `node` like the built service (no loader in the process
 * whose memory and speed are measured). They are transpiled here, into node_modules/.cache so that their imports
 * resolve to the project's node_modules and no build output lands in the source tree.
 */
const SOURCE = fileURLToPath(new URL('./baselines/', import.meta.url));
const OUTPUT = fileURLToPath(new URL('../node_modules/.cache/agent-service-bench/baselines/', import.meta.url));

/** Transpiles bench/baselines/*.ts; answers the folder of the .js files. */
export function compileBaselines(): string {
  mkdirSync(OUTPUT, { recursive: true });
  for (const file of readdirSync(SOURCE).filter((name) => name.endsWith('.ts'))) {
    const { outputText } = ts.transpileModule(readFileSync(join(SOURCE, file), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023, verbatimModuleSyntax: true },
      fileName: file,
    });
    writeFileSync(join(OUTPUT, file.replace(/\.ts$/, '.js')), outputText);
  }
  // The project is ESM ("type": "module"), but this folder is not inside it as far as Node is concerned.
  writeFileSync(join(OUTPUT, 'package.json'), '{ "type": "module" }\n');
  return OUTPUT;
}

/**
 * The path of a transpiled baseline, by name (`raw-http`, `express-hello`, `bare-mcp`, `upstream-mcp`, `argon2`,
 * `probe`).
 */
export function baselineScript(name: string): string {
  return join(OUTPUT, `${name}.js`);
}
