import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Type-checking generated TypeScript the way the repository checks its own: its tsconfig.json, strict. */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The repository's compiler options (tsconfig.json), without output. */
export function compilerOptions(): ts.CompilerOptions {
  const configFile = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (p) => ts.sys.readFile(p));
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, ROOT);
  return { ...parsed.options, noEmit: true };
}

/** Type-checks files with the repository's compiler options: diagnostics as `file:line: message`. */
export function typeCheck(files: string[]): string[] {
  const program = ts.createProgram(files, compilerOptions());
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${path.relative(ROOT, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : '';
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}
