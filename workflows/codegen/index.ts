import type { Workflow } from '../schema.js';
import type { CodegenTool } from './mcp.js';
import { generatePython, moduleNameOf } from './python.js';
import { generateTypeScript, kebabName } from './typescript.js';

/**
 * Source code for a workflow, in the languages the builder exports to. Each generator writes the graph the service
 * runs (`compileWorkflow`), so a downloaded workflow behaves as it did in the builder.
 */

export type CodeLanguage = 'python' | 'typescript';
export type { CodegenTool } from './mcp.js';

export interface GeneratedCode {
  language: CodeLanguage;
  /** A file name the module can be saved and imported under: `research_flow.py`, `research-flow.ts`. */
  filename: string;
  code: string;
}

/**
 * Generates a workflow's module. `name` names the module (its file and header); it defaults to the workflow's
 * name. `tools` tells which tools come from connected MCP servers (and which servers): the module calls those
 * through the MCP client of its language, each server's URL and credential read from parameters or environment
 * variables (never written into the code). Throws `WorkflowCompileError` for a workflow that cannot be built into a
 * graph.
 */
export function generateCode(
  workflow: Workflow,
  options: { language: CodeLanguage; name?: string; tools?: readonly CodegenTool[] },
): GeneratedCode {
  const name = options.name ?? workflow.name;
  const { tools } = options;
  switch (options.language) {
    case 'python':
      return {
        language: 'python',
        filename: `${moduleNameOf(name)}.py`,
        code: generatePython(workflow, { name, ...(tools && { tools }) }),
      };
    case 'typescript':
      return {
        language: 'typescript',
        filename: `${kebabName(name)}.ts`,
        code: generateTypeScript(workflow, { name, ...(tools && { tools }) }),
      };
  }
}
