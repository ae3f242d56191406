import { BadRequestError, CommonErrorCode, type ScimType } from '../../errors.js';

/*
 * What a SCIM client switches on is the body's `scimType` (RFC 7644 §3.12), and the SCIM body has no code: SCIM
 * declares no codes of its own. Its errors carry the common codes (BAD_REQUEST, NOT_FOUND, CONFLICT…) for logs.
 */

/** A SCIM request refused with 400; `scimType` says why. */
export function scimBadRequest(message: string, scimType: ScimType): BadRequestError {
  return new BadRequestError(message, { code: CommonErrorCode.BadRequest, scimType });
}
