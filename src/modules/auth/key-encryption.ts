import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type Config, ConfigError, decodeKeyEncryptionKey } from '../../config.js';
import type { Logger } from '../../logger.js';

/**
 * Encryption at rest of the signing keys' private halves: AES-256-GCM under a key-encryption key (KEK), with the
 * key's `kid` as additional authenticated data, so a ciphertext moved to another row does not decrypt. A stored
 * value reads `v1:<iv>.<ciphertext and tag>` (base64url); the version lets the scheme change later. Rows written
 * before encryption existed hold the JWK itself and are still read (and re-written encrypted on start).
 */

const VERSION = 'v1';
const PREFIX = `${VERSION}:`;
const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The development KEK's file in the data directory. */
export const DEV_KEY_FILE = 'key-encryption.key';

/** The stored private key could not be opened: the wrong KEK, or an altered or unknown value. */
export class KeyDecryptionError extends ConfigError {
  constructor(kid: string, why: string) {
    super([`KEY_ENCRYPTION_KEY: cannot decrypt signing key ${kid}: ${why}`]);
    this.name = 'KeyDecryptionError';
  }
}

export interface KeyEncryptionOptions {
  /** Where the KEK comes from: configured bytes, a file in the data directory, or memory (throwaway databases). */
  source: { key: Buffer } | { file: string } | { memory: true };
  logger?: Logger;
}

/** A stored value written by `seal`, as opposed to a plaintext JWK of older installations. */
export function isSealed(stored: string): boolean {
  return stored.startsWith(PREFIX);
}

export class KeyEncryption {
  #key: Buffer | undefined;

  constructor(private readonly options: KeyEncryptionOptions) {}

  /**
   * The KEK the configuration asks for: `KEY_ENCRYPTION_KEY` when set; otherwise (development only: production
   * refuses to start without it) one generated into the SQLite database's directory, or `./data` for PostgreSQL,
   * or kept in memory for `sqlite::memory:`.
   */
  static fromConfig(config: Pick<Config, 'auth' | 'database'>, logger?: Logger): KeyEncryption {
    const configured = config.auth.keyEncryptionKey;
    if (configured) return new KeyEncryption({ source: { key: configured }, ...(logger && { logger }) });
    const { database } = config;
    if (database.dialect === 'sqlite' && database.filename === ':memory:') {
      return new KeyEncryption({ source: { memory: true }, ...(logger && { logger }) });
    }
    const dataDir = database.dialect === 'sqlite' ? dirname(resolve(database.filename)) : resolve('data');
    return new KeyEncryption({ source: { file: join(dataDir, DEV_KEY_FILE) }, ...(logger && { logger }) });
  }

  /** The KEK's bytes, read or generated on first use. */
  key(): Buffer {
    this.#key ??= this.#resolve();
    return this.#key;
  }

  /** Encrypts a private JWK (its JSON text) for the row of `kid`. */
  seal(kid: string, plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(CIPHER, this.key(), iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(kid, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${iv.toString('base64url')}.${sealed.toString('base64url')}`;
  }

  /** The private JWK's JSON text of a stored value, sealed or (from before encryption) plain. */
  open(kid: string, stored: string): string {
    if (!isSealed(stored)) {
      if (stored.trimStart().startsWith('{')) return stored;
      throw new KeyDecryptionError(
        kid,
        `the stored value is in an unknown format (${stored.split(':')[0]!.slice(0, 8)})`,
      );
    }
    const [ivText, sealedText, ...rest] = stored.slice(PREFIX.length).split('.');
    const iv = Buffer.from(ivText ?? '', 'base64url');
    const sealed = Buffer.from(sealedText ?? '', 'base64url');
    if (rest.length > 0 || iv.length !== IV_BYTES || sealed.length <= TAG_BYTES) {
      throw new KeyDecryptionError(kid, 'the stored value is malformed');
    }
    try {
      const decipher = createDecipheriv(CIPHER, this.key(), iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(kid, 'utf8'));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new KeyDecryptionError(
        kid,
        'it was encrypted with another key-encryption key (or the stored value was altered); ' +
          'start with the KEY_ENCRYPTION_KEY the signing keys were encrypted with',
      );
    }
  }

  #resolve(): Buffer {
    const { source, logger } = this.options;
    if ('key' in source) return source.key;
    if ('memory' in source) return randomBytes(32);
    const existing = readKeyFile(source.file);
    if (existing) {
      // The key protects every signing key: a file others can read defeats it.
      const loose = (statSync(source.file).mode & 0o077) !== 0;
      logger?.warn(
        { file: source.file, ...(loose && { mode: (statSync(source.file).mode & 0o777).toString(8) }) },
        loose
          ? 'the development key-encryption key file is readable by others: chmod 600 it, and set KEY_ENCRYPTION_KEY in production'
          : 'signing keys are encrypted with a generated development key kept beside the data; set KEY_ENCRYPTION_KEY in production',
      );
      return existing;
    }
    const generated = randomBytes(32);
    if (!createKeyFile(source.file, generated)) return readKeyFile(source.file)!;
    logger?.warn(
      { file: source.file },
      'KEY_ENCRYPTION_KEY is not set: generated a development key-encryption key (owner-only file); ' +
        'set KEY_ENCRYPTION_KEY in production',
    );
    return generated;
  }
}

/** The key in the file, undefined when there is no file; a ConfigError when it holds something else. */
function readKeyFile(path: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError([
      `KEY_ENCRYPTION_KEY: unset, and the development key file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
  const key = decodeKeyEncryptionKey(text);
  if (!key) throw new ConfigError([`KEY_ENCRYPTION_KEY: unset, and ${path} does not hold a 32-byte key`]);
  return key;
}

/**
 * Writes the key to `path` readable by the owner only, atomically: the file appears complete or not at all.
 * False when another process created it first.
 */
function createKeyFile(path: string, key: Buffer): boolean {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, `${key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    chmodSync(temporary, 0o600);
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}
