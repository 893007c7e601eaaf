// Mutation testing of the layers the unit project tests on their own: `npm run test:mutation`.
// A mutant that survives is a change of behaviour no test noticed (or one that changes nothing).
import jestConfig from './jest.config.js';

const unit = jestConfig.projects.find((project) => project.displayName === 'unit');

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'jest',
  jest: { projectType: 'custom', configFile: 'jest.config.js', config: { projects: [unit] } },
  testRunnerNodeArgs: ['--experimental-vm-modules'],
  // The domain, the use cases, the pure code of the HTTP edge and of the configuration, the
  // replicas' routing rules (checked against fakes), and the high-water marks' algorithm.
  mutate: [
    'src/domain/**/*.ts',
    'src/application/**/*.ts',
    'src/interface/http/platform/error.filter.ts',
    'src/interface/http/pets/pet-errors.filter.ts',
    'src/interface/http/pets/pet.dto.ts',
    'src/interface/http/platform/body-validation.pipe.ts',
    'src/interface/http/platform/validation-errors.ts',
    'src/interface/http/pets/list-pets-query.pipe.ts',
    'src/interface/http/pets/pet-name-pattern.ts',
    'src/interface/http/pets/cursor.ts',
    'src/infrastructure/platform/config.ts',
    'src/infrastructure/platform/config/*.ts',
    'src/infrastructure/platform/database/replica-set.ts',
    // The high-water marks' pure algorithm and their sharing between instances (checked with an
    // injected clock and an in-memory reading queue).
    'src/infrastructure/pets/high-water-marks.ts',
    'src/infrastructure/pets/shared-readings.ts',
  ],
  // Not copied into the sandbox: the embedded PostgreSQL's data (as root, data/test/postgres links
  // to a cluster elsewhere, which Stryker cannot copy), builds, reports and a running cluster.
  ignorePatterns: ['data', 'dist', 'bench/dist', 'tools/dist', 'reports', '.cluster'],
  coverageAnalysis: 'perTest',
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  tempDirName: '.stryker-tmp',
};
