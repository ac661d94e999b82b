/**
 * The reporting endpoint emulator: a real GraphQL server on loopback with seeded session data and
 * injectable faults. It is the default target of the demo, the tests and the benchmark; see
 * docs/emulator.md.
 *
 * Not exported on purpose: the data generator, the store and the fast-path writer are internals
 * whose shape may change; tests that need them import the modules directly.
 */
export { startEmulator } from './start-emulator.js';
export { DEFAULT_EMULATOR_API_KEY } from './options.js';
export { accountSeed, emulatorAccounts } from './accounts.js';
export type {
  Amendment, ArgTypes, Emulator, EmulatorAccount, EmulatorAccountStats, EmulatorAccountView, EmulatorDataset, EmulatorFaults,
  EmulatorOptions, EmulatorStats, HoldBack, WindowRule,
} from './options.js';
