import { createRequire } from 'node:module';
import type * as OpenFga from '@openfga/sdk';

let sdk: typeof OpenFga | undefined;

/**
 * The OpenFGA SDK, loaded when an OpenFGA adapter first needs it: a deployment on the embedded evaluator never
 * loads it (it holds about 7 MB of a process's memory).
 */
export function openFgaSdk(): typeof OpenFga {
  return (sdk ??= createRequire(import.meta.url)('@openfga/sdk') as typeof OpenFga);
}
