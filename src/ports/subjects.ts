import type { Caller } from './caller.js';

/** Object ids in the authorization model for the service's own entities. */
export const userObject = (userId: string): string => `user:${userId}`;
export const principalObject = (serviceId: string): string => `service_principal:${serviceId}`;
export const roleObject = (role: string): string => `role:${role}`;
export const groupObject = (groupId: string): string => `group:${groupId}`;
/** The installation as a whole (administration, provisioning). */
export const SYSTEM = 'system:global';

/** The subject authorization checks are made for. */
export function subjectOf(caller: Caller): string {
  return caller.subject;
}
