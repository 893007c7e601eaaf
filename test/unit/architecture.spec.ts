import path from 'node:path';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseConfig from 'dependency-cruiser/config-utl/extract-depcruise-config';

// `npm run lint` runs these rules over src/; this shows that each one catches what it is for.
const FIXTURE = path.resolve('test/fixtures/layers');
const CONFIG = path.resolve('.dependency-cruiser.mjs');

async function violationsIn(dir: string): Promise<string[]> {
  const { forbidden } = await extractDepcruiseConfig(CONFIG);
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    const { output } = await cruise(['src'], {
      ruleSet: { forbidden },
      validate: true,
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
    });
    const { summary } = output as ICruiseResult;
    // A package by its name, a Node module as `node:` + its name.
    const named = (to: string): string =>
      /node_modules\/([^/]+)\//.exec(to)?.[1] ?? (to.includes('/') ? to : `node:${to}`);
    return summary.violations.map(({ rule, from, to }) => `${rule.name}: ${from} → ${named(to)}`).sort();
  } finally {
    process.chdir(cwd);
  }
}

describe('the dependency rule (.dependency-cruiser.mjs)', () => {
  it('catches one deliberate violation of each kind, and nothing in the files that keep the rule', async () => {
    expect(await violationsIn(FIXTURE)).toEqual([
      'access-and-pets-apart: src/application/access/api-keys.ts → src/application/pets/list-pets.ts',
      'application-needs-only-the-domain: src/application/pets/clock.ts → node:os',
      'application-needs-only-the-domain: src/application/pets/list-pets.ts → express',
      'dependencies-in-package-json: src/interface/http/pets/pet-path.ts → fast-check',
      'dependencies-in-package-json: src/interface/http/pets/pet-path.ts → path-to-regexp',
      'domain-is-plain-typescript: src/domain/pets/pet-file.ts → node:fs',
      'domain-is-plain-typescript: src/domain/pets/pet-id.ts → node:crypto',
      'domain-is-plain-typescript: src/domain/pets/pet-store.ts → typeorm',
      'infrastructure-never-drives: src/infrastructure/pets/typeorm-pets.ts → src/interface/http/pets/pet.dto.ts',
      'interface-drives-through-ports: src/interface/http/pets/pets.controller.ts → src/infrastructure/pets/typeorm-pets.ts',
      'interface-speaks-to-no-store: src/interface/http/pets/pet-rows.ts → pg',
      'layers-do-not-import-the-composition-root: src/infrastructure/pets/wiring.ts → src/app.module.ts',
      'no-cycles: src/domain/pets/owner.ts → src/domain/pets/shelter.ts',
      'only-the-four-layers: src/pets/stray.ts → src/domain/pets/pet.ts',
      'pets-and-access-apart: src/interface/http/pets/owner.ts → src/interface/http/access/key.guard.ts',
      'platform-knows-no-product: src/interface/http/platform/error.filter.ts → src/interface/http/pets/pet.dto.ts',
    ]);
  });
});
