/**
 * The builder module's public API: versioned workflows, their validation, diffs, generated code and runs. Its wire
 * (the run streams) calls the run service.
 */
export { createBuilderModule, type BuilderModuleDeps, type BuilderParts } from './builder.module.js';
export { BuilderErrorCode } from './builder.errors.js';
export type { ResourceEntry, ResourceLister, ToolCallResult, WorkflowTools } from './builder.ports.js';
export { ResumeRequest, Run, RunRequest } from './builder.schemas.js';
export { type RunEvent, type RunHandle, type RunView, WorkflowRuns } from './builder.runs.js';
export { BuilderService } from './builder.service.js';
export { PublishedCatalog, runToolResult } from './builder.publishing.js';
export type { WorkflowRunsTable, WorkflowTagsTable, WorkflowVersionsTable, WorkflowsTable } from './builder.tables.js';
