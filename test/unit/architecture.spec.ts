import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve('src');

/** The composition root: the entry points and the module that wires everything. They may import anything. */
const ROOT_FILES = ['app.module.ts', 'app.ts', 'instrumentation.ts', 'keys.ts', 'main.ts', 'migrate.ts'];

/**
 * What each folder of src/ may import: other folders of src/ by name, and packages unless
 * `packages: false`. The product (domain, application, pets, access, schema) sits on the
 * platform; the platform knows no pet, and the core knows no framework.
 */
const RULES: Record<string, { folders: string[]; packages: boolean }> = {
  domain: { folders: ['domain'], packages: false },
  application: { folders: ['domain', 'application'], packages: false },
  pets: { folders: ['domain', 'application', 'pets', 'access', 'platform'], packages: true },
  access: { folders: ['application', 'access', 'platform'], packages: true },
  // The database's tables: the records of every folder, and the migrations that make them.
  schema: { folders: ['schema', 'pets', 'access', 'platform'], packages: true },
  platform: { folders: ['platform'], packages: true },
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)],
  );
}

/** Static imports and re-exports, side-effect imports, and dynamic import() with a string literal. */
export function importsOf(source: string): string[] {
  const pattern =
    /\b(?:import|export)\s[^;]*?\bfrom\s+['"]([^'"]+)['"]|\bimport\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  return [...source.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

/** The folder of src/ (or root file) a relative import lands in; null for a package. */
function folderOf(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  return path.relative(SRC, path.resolve(path.dirname(file), specifier)).split(path.sep)[0] ?? '';
}

/** Why `source`, the text of `file` (a path under src/), breaks the rule; empty when it does not. */
export function violations(file: string, source: string): string[] {
  const relative = path.relative(SRC, file);
  const [top] = relative.split(path.sep);
  if (top === undefined || relative.startsWith('..')) return [`${relative} is not under src/`];
  if (!relative.includes(path.sep)) {
    return ROOT_FILES.includes(relative)
      ? []
      : [`${relative} is in src/ itself, which holds only ${ROOT_FILES.join(', ')}`];
  }
  const rule = RULES[top];
  if (rule === undefined) return [`${relative} is in src/${top}/, a folder the dependency rule does not name`];
  return importsOf(source).flatMap((specifier) => {
    const folder = folderOf(file, specifier);
    const allowed = folder === null ? rule.packages : rule.folders.includes(folder);
    return allowed ? [] : [`${relative} imports ${specifier}`];
  });
}

describe('the dependency rule', () => {
  it('holds for every file of src/, the root files included', () => {
    const files = filesUnder(SRC);

    expect(files.length).toBeGreaterThan(60);
    expect(files.flatMap((file) => violations(file, readFileSync(file, 'utf8')))).toEqual([]);
  });

  it('catches a deliberate violation of each kind', () => {
    const inSrc = (name: string): string => path.join(SRC, name);

    expect(violations(inSrc('domain/pet.ts'), "import { x } from '../platform/http/api-error.js';")).toEqual([
      'domain/pet.ts imports ../platform/http/api-error.js',
    ]);
    expect(violations(inSrc('domain/pet.ts'), "import { Injectable } from '@nestjs/common';")).toHaveLength(1);
    expect(violations(inSrc('application/get-pet.ts'), "const t = await import('typeorm');")).toHaveLength(1);
    expect(violations(inSrc('platform/http/x.ts'), "const m = await import('../../pets/cursor.js');")).toEqual([
      'platform/http/x.ts imports ../../pets/cursor.js',
    ]);
    expect(violations(inSrc('platform/http/x.ts'), "export { Pet } from '../../domain/pet.js';")).toHaveLength(1);
    expect(violations(inSrc('access/x.ts'), "import '../pets/pet.record.js';")).toHaveLength(1);
    expect(violations(inSrc('helpers.ts'), '')).toEqual([
      `helpers.ts is in src/ itself, which holds only ${ROOT_FILES.join(', ')}`,
    ]);
    expect(violations(inSrc('adapters/x.ts'), '')).toHaveLength(1);
  });

  it('lets each folder import what it may', () => {
    const inSrc = (name: string): string => path.join(SRC, name);

    expect(
      violations(inSrc('pets/x.ts'), "import { a } from '../platform/http/api-error.js';\nimport 'typeorm';"),
    ).toEqual([]);
    expect(violations(inSrc('application/x.ts'), "import type { Pet } from '../domain/pet.js';")).toEqual([]);
    expect(violations(inSrc('main.ts'), "import { x } from './platform/process/config.js';")).toEqual([]);
  });
});

/** The "Follow a request" lists of docs/contributing.md: endpoint, and the files it names. */
function requestPaths(): Map<string, string[]> {
  const contributing = readFileSync('docs/contributing.md', 'utf8');
  const section = contributing.split('### Follow a request')[1]?.split('\n### ')[0] ?? '';
  // Each item runs to the next item or to the end of the list (a blank line).
  const items = section.split('\n- ').slice(1);
  const paths = new Map<string, string[]>();
  for (const item of items.map((text) => text.split('\n\n')[0] ?? '')) {
    const operation = /^\*\*(\w+)\*\*/.exec(item)?.[1] ?? item;
    paths.set(
      operation,
      [...item.matchAll(/`(src\/[^`]+)`/g)].map((match) => match[1] ?? ''),
    );
  }
  return paths;
}

describe('following a request', () => {
  it('takes at most 8 files of the product per endpoint, each of which exists', () => {
    const paths = requestPaths();

    expect([...paths.keys()]).toEqual(['listPets', 'createPet', 'getPet']);
    for (const [operation, files] of paths) {
      expect({
        operation,
        missing: files.filter((file) => !existsSync(file)),
        atMost8: files.length > 0 && files.length <= 8,
        distinct: new Set(files).size === files.length,
      }).toEqual({ operation, missing: [], atMost8: true, distinct: true });
    }
  });
});
