import type { Workflow } from '../schema.js';
import { generatePython, moduleNameOf } from './python.js';
import { generateTypeScript, kebabName } from './typescript.js';

/**
 * Source code for a workflow, in the languages the builder exports to. Each generator writes the graph the service
 * runs (`compileWorkflow`), so a downloaded workflow behaves as it did in the builder.
 */

export type CodeLanguage = 'python' | 'typescript';

export interface GeneratedCode {
  language: CodeLanguage;
  /** A file name the module can be saved and imported under: `research_flow.py`, `research-flow.ts`. */
  filename: string;
  code: string;
}

/**
 * Generates a workflow's module. `name` names the module (its file and header); it defaults to the workflow's
 * name. Throws `WorkflowCompileError` for a workflow that cannot be built into a graph.
 */
export function generateCode(workflow: Workflow, options: { language: CodeLanguage; name?: string }): GeneratedCode {
  const name = options.name ?? workflow.name;
  switch (options.language) {
    case 'python':
      return { language: 'python', filename: `${moduleNameOf(name)}.py`, code: generatePython(workflow, { name }) };
    case 'typescript':
      return {
        language: 'typescript',
        filename: `${kebabName(name)}.ts`,
        code: generateTypeScript(workflow, { name }),
      };
  }
}
