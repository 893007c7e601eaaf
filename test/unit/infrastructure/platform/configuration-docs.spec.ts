import { readFileSync } from 'node:fs';
import { getMetadataStorage } from 'class-validator';
import { EnvironmentVariables } from '../../../../src/infrastructure/platform/config/environment-variables.js';

// The variables and defaults operators read (README.md's "Configuration" table, .env.example) are
// the ones EnvironmentVariables declares.

/** Every variable the class declares, with its default as text; undefined: none (unset, or an empty list). */
function declared(): Map<string, string | undefined> {
  const defaults = new Map(Object.entries(new EnvironmentVariables()));
  const names = getMetadataStorage()
    .getTargetValidationMetadatas(EnvironmentVariables, '', true, false)
    .map((rule) => rule.propertyName);
  return new Map(names.map((name) => [name, shown(defaults.get(name))]));
}

/** A default as the docs write it; the lists' default, empty, is none. */
function shown(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/**
 * The README's table: the variables each row names in its first cell, and the defaults its last
 * cell gives, one per variable in backticks; a cell that starts "unset" or "none" gives none.
 */
function readmeTable(): Map<string, string | undefined> {
  const section = readFileSync('README.md', 'utf8').split('\n## Configuration\n')[1]?.split('\n## ')[0] ?? '';
  const table = new Map<string, string | undefined>();
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const cells = row.split('|').map((cell) => cell.trim());
    const names = backticked(cells[1] ?? '');
    const defaultCell = cells[3] ?? '';
    const defaults = /^(unset|none)\b/.test(defaultCell) ? [] : backticked(defaultCell);
    if (defaults.length > 0 && defaults.length !== names.length)
      throw new Error(`README.md: the row of ${names.join(', ')} gives ${defaults.length} defaults`);
    names.forEach((name, i) => table.set(name, defaults[i]));
  }
  return table;
}

function backticked(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
}

/** .env.example's variables, set (`NAME=value`) or shown commented out (`# NAME=example`). */
function envExample(): { names: string[]; set: Map<string, string> } {
  const lines = readFileSync('.env.example', 'utf8').split('\n');
  const names = lines.flatMap((line) => /^#? ?([A-Z][A-Z0-9_]*)=/.exec(line)?.[1] ?? []);
  const set = new Map(
    lines.flatMap((line) => {
      const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
      return match ? [[match[1] ?? '', match[2] ?? ''] as const] : [];
    }),
  );
  return { names, set };
}

describe('the configuration as documented', () => {
  it("README.md's table names exactly the variables EnvironmentVariables declares", () => {
    expect([...readmeTable().keys()].sort()).toEqual([...declared().keys()].sort());
  });

  it("README.md's table gives each variable the class's default", () => {
    const table = readmeTable();

    for (const [name, value] of declared())
      expect({ name, default: table.get(name) }).toEqual({ name, default: value });
  });

  it('.env.example lists every variable, and others only of OpenTelemetry (its SDK reads them itself)', () => {
    const { names } = envExample();

    expect([...declared().keys()].filter((name) => !names.includes(name))).toEqual([]);
    expect(names.filter((name) => !declared().has(name) && !name.startsWith('OTEL_'))).toEqual([]);
  });

  it('.env.example sets a variable only to its default', () => {
    const variables = declared();

    for (const [name, value] of envExample().set) expect({ name, value }).toEqual({ name, value: variables.get(name) });
  });
});
