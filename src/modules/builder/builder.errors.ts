import {
  BadRequestError,
  CommonErrorCode,
  ConflictError,
  NotFoundError,
  ServiceUnavailableError,
} from '../../errors.js';
import type { ValidationReport } from '../../../workflows/validate.js';

/** The builder's own error codes. */
export const BuilderErrorCode = {
  /** The definition breaks a validation rule; the body carries the whole report. */
  Invalid: 'WORKFLOW_INVALID',
  /** An update was based on a version that is no longer current. */
  VersionConflict: 'WORKFLOW_VERSION_CONFLICT',
  /** A resume of a run that is not waiting for an answer. */
  RunNotWaiting: 'WORKFLOW_RUN_NOT_WAITING',
  /** An answer a human node does not take (not text, or too long); the run still waits. */
  InvalidAnswer: 'WORKFLOW_INVALID_ANSWER',
  /** The run could not go on with a valid answer; it still waits at its human node, as it was. */
  AnswerNotTaken: 'WORKFLOW_ANSWER_NOT_TAKEN',
} as const;
export type BuilderErrorCode = (typeof BuilderErrorCode)[keyof typeof BuilderErrorCode];

/** Missing, or not the caller's to see: the same answer, so an id reveals nothing. */
export const workflowNotFound = (id: string) =>
  new NotFoundError(`Workflow ${id} not found`, { code: CommonErrorCode.NotFound });

export const versionNotFound = (id: string, version: number) =>
  new NotFoundError(`Workflow ${id} has no version ${version}`, { code: CommonErrorCode.NotFound });

export const runNotFound = (id: string) =>
  new NotFoundError(`Workflow run ${id} not found`, { code: CommonErrorCode.NotFound });

export const invalidWorkflow = (report: ValidationReport) =>
  new BadRequestError(
    `The workflow is not valid: ${report.errors
      .slice(0, 3)
      .map((issue) => issue.message)
      .join(' ')}${report.errors.length > 3 ? ` (and ${report.errors.length - 3} more)` : ''}`,
    { code: BuilderErrorCode.Invalid, extra: { validation: report } },
  );

export const versionConflict = (current: number) =>
  new ConflictError(`The workflow has changed since: its current version is ${current}. Reload it and save again`, {
    code: BuilderErrorCode.VersionConflict,
    extra: { current_version: current },
  });

export const runNotWaiting = (status: string) =>
  new ConflictError(`The run is ${status}, not waiting for an answer`, {
    code: BuilderErrorCode.RunNotWaiting,
    extra: { status },
  });

export const invalidAnswer = (problem: string) =>
  new BadRequestError(`The answer is not one a human step takes: ${problem}. The run still waits for an answer`, {
    code: BuilderErrorCode.InvalidAnswer,
  });

export const answerNotTaken = (node: string) =>
  new ServiceUnavailableError(
    `The run could not go on with the answer; it still waits at "${node}" and can be answered again`,
    { code: BuilderErrorCode.AnswerNotTaken, extra: { status: 'waiting', waiting_node: node } },
  );
