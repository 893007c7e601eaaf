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
  // Starting servers (embedded PostgreSQL, Nest, Chromium) on a loaded 2-core machine needs more
  // than Jest's default 5 s.
  testTimeout: 60_000,
  projects: [
    // Plain Jest: domain, use cases, pure edge functions. No Nest app, no database. test/soak: the
    // soak's checks (scripts/soak/, plain ESM JavaScript, run untransformed).
    {
      ...shared,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.spec.ts', '<rootDir>/test/soak/**/*.spec.mjs'],
    },
    // Adapters against a real PostgreSQL: DATABASE_URL, else the embedded one.
    { ...shared, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.spec.ts'] },
    // createApp() on a real socket, driven with fetch, on a real PostgreSQL.
    // Every response is checked against docs/openapi.json by test/support/contract.ts.
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/contract.ts'],
    },
    // `npm run test:process`: the built service as a child process (configuration errors, signals).
    { ...shared, displayName: 'process', testMatch: ['<rootDir>/test/process/**/*.process-spec.ts'] },
    // `npm run test:browser`: Swagger UI in Debian's Chromium, driven by playwright-core.
    { ...shared, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'] },
    // `npm run test:cluster`: HAProxy, 3 built instances, three PostgreSQL nodes under Patroni, Redis
    // (scripts/cluster/cluster.sh), measured through the balancer. The files share one cluster,
    // taken down once they have all run.
    {
      ...shared,
      displayName: 'cluster',
      testMatch: ['<rootDir>/test/cluster/**/*.cluster-spec.ts'],
      globalTeardown: '<rootDir>/test/support/cluster-teardown.mjs',
    },
  ],
};
