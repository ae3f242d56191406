import { CommonErrorCode, ConflictError, ForbiddenError, NotFoundError } from '../../errors.js';

/** The playground's own error codes. */
export const PlaygroundErrorCode = {
  /** The session already has a turn running (one at a time: its transcript is one line of conversation). */
  TurnRunning: 'PLAYGROUND_TURN_RUNNING',
  /** There is no running turn to cancel. */
  NoTurnRunning: 'PLAYGROUND_NO_TURN_RUNNING',
  /** A service principal asked for something only people have. */
  PeopleOnly: 'PLAYGROUND_PEOPLE_ONLY',
} as const;
export type PlaygroundErrorCode = (typeof PlaygroundErrorCode)[keyof typeof PlaygroundErrorCode];

/** Missing, or someone else's: the same answer, so a session id reveals nothing (spec "Errors" 11). */
export const sessionNotFound = (id: string) =>
  new NotFoundError(`Playground session ${id} not found`, { code: CommonErrorCode.NotFound });

export const turnRunning = () =>
  new ConflictError('A turn is already running in this session; wait for its end or cancel it', {
    code: PlaygroundErrorCode.TurnRunning,
  });

export const noTurnRunning = () =>
  new ConflictError('No turn is running in this session', { code: PlaygroundErrorCode.NoTurnRunning });

export const peopleOnly = () =>
  new ForbiddenError('Playground sessions belong to people; service principals have none', {
    code: PlaygroundErrorCode.PeopleOnly,
  });
