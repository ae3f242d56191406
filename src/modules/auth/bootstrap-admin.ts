import type { Config } from '../../config.js';
import { ConflictError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { UsersService } from '../users/index.js';

/**
 * Gives the bootstrap administrator the configured email address (`ADMIN_EMAIL`) when the account has none, so
 * that it can log in by email and every user body carries a string email. An address already set is kept: the
 * administrator may have changed it. Another account holding the address is logged, not fatal.
 */
export async function ensureAdminEmail(
  users: UsersService,
  config: Pick<Config['auth'], 'adminUsername' | 'adminEmail'>,
  logger: Logger,
): Promise<void> {
  const admin = await users.getByUsername(config.adminUsername);
  if (!admin || admin.email !== null) return;
  try {
    await users.updateProfile(admin.id, { email: config.adminEmail });
    logger.info({ username: admin.username }, 'bootstrap administrator email set from ADMIN_EMAIL');
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    logger.warn(
      { username: admin.username },
      'ADMIN_EMAIL belongs to another account: the bootstrap administrator keeps no email',
    );
  }
}
