// The LightGBM reference models and LightGBM's own predictions live outside the repository,
// in the workplace's shared folder beside it (`../shared/fixtures/lightgbm/`, see its
// README.md). Every test finds them here, relative to this checkout, and skips with the
// reason when they are absent instead of dropping them silently.

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The folder, with a trailing slash. */
export const lightgbmFixtures = fileURLToPath(
  new URL('../../../shared/fixtures/lightgbm/', import.meta.url),
);
export const haveLightgbmFixtures = existsSync(`${lightgbmFixtures}README.md`);
/** Why a test that needs them is skipped. */
export const noLightgbmFixtures = `LightGBM reference files not found at ${lightgbmFixtures} (the shared folder beside the repository; see its README.md)`;
/** For `test(name, { skip: lightgbmSkip }, …)`: false when they are present. */
export const lightgbmSkip: string | false = haveLightgbmFixtures ? false : noLightgbmFixtures;
