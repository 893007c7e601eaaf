// Three projects, one command (`npm test`). ESM throughout (Nest 12 is ESM-only): ts-jest with
// useESM, and `.js` stripped from relative imports so TypeScript sources resolve.
/** @type {import('jest').Config} */
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
};

/** @type {import('jest').Config} */
export default {
  projects: [
    // Plain Jest: domain, use cases, pure edge functions. No Nest app, no database.
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    // Adapters against a real PostgreSQL: DATABASE_URL, else the embedded one. Starting servers
    // (embedded PostgreSQL, Nest) on a loaded 2-core machine needs more than Jest's default 5 s.
    { ...shared, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.spec.ts'], testTimeout: 30_000 },
    // createApp() on a real socket, driven with fetch, on a real PostgreSQL.
    { ...shared, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'], testTimeout: 30_000 },
  ],
};
