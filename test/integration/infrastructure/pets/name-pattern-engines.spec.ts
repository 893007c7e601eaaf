import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { nameProblems, PET_NAME_FORBIDDEN, PET_NAME_MARKS, PET_NAME_SPACES } from '../../../../src/domain/pets/pet.js';

/**
 * Every `pattern` of docs/openapi.json in the regex engines that client generators and validators
 * use, each searching as JSON Schema says (unanchored): ECMA-262 with and without `u` (here),
 * Python's re, Java's java.util.regex, Go's regexp and Rust's regex (scripts/ci/regex-engines.sh
 * installs them on CI, where REGEX_ENGINES_REQUIRED=1 makes a missing one fail; elsewhere it is
 * skipped). Each engine's verdict on the same names must be the service's own (newPet's name check).
 */
const ENGINES_DIR = path.resolve('test/support/regex-engines');
const REQUIRED = process.env.REGEX_ENGINES_REQUIRED === '1';
/**
 * The engines of other languages start a JVM and build Go and Rust harnesses: the CI step of their
 * own runs them (REGEX_ENGINES_REQUIRED=1), and so does REGEX_ENGINES=all; `npm test` checks the
 * two ECMA-262 engines, in process.
 */
const OTHER_ENGINES = REQUIRED || process.env.REGEX_ENGINES === 'all';
const SKIPPED = new Set<string>();

type Engine = {
  name: string;
  /** Whether the engine's strings can hold a lone surrogate (UTF-8 ones cannot). */
  surrogates: boolean;
  /** null: the engine is not installed here. */
  run: ((input: string) => string) | null;
};

const has = (command: string): boolean =>
  OTHER_ENGINES && spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

function processEngine(command: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return (input: string): string => {
    const result = spawnSync(command, args, { input, encoding: 'utf8', env, maxBuffer: 1 << 26 });
    if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`);
    return result.stdout;
  };
}

/** Build caches kept between runs, one directory per user: /tmp is shared, and another user's files are not ours to write. */
const SCRATCH = path.join(tmpdir(), `petstore-regex-engines-${userInfo().username}`);

/** The Rust harness, built once, offline, from Debian's packaged crates (crates.io is not reachable). */
function rustEngine(): ((input: string) => string) | null {
  const registry = '/usr/share/cargo/registry';
  if (!has('cargo') || !existsSync(registry)) return null;
  const home = path.join(SCRATCH, 'cargo');
  mkdirSync(home, { recursive: true });
  writeFileSync(
    path.join(home, 'config.toml'),
    `[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "${registry}"\n[net]\noffline = true\n`,
  );
  // Built from a fresh copy, so that the Cargo.lock of whichever cargo runs stays out of the
  // repository, and one written by another cargo (a newer lock format) is not read by this one.
  const project = path.join(SCRATCH, 'rust');
  rmSync(project, { recursive: true, force: true });
  cpSync(path.join(ENGINES_DIR, 'rust'), project, { recursive: true });
  const target = path.join(SCRATCH, 'target');
  const env = { ...process.env, CARGO_HOME: home, CARGO_TARGET_DIR: target };
  const build = spawnSync('cargo', ['build', '--quiet', '--manifest-path', path.join(project, 'Cargo.toml')], {
    env,
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`cargo build failed: ${build.stderr}`);
  return processEngine(path.join(target, 'debug/regex-engine'), []);
}

function goEngine(): ((input: string) => string) | null {
  if (!has('go')) return null;
  const cache = path.join(SCRATCH, 'go');
  return processEngine('go', ['run', path.join(ENGINES_DIR, 'engine.go')], {
    ...process.env,
    GOCACHE: cache,
    GOPATH: cache,
  });
}

/** The protocol of test/support/regex-engines: the pattern, then one name a line, as hex code points. */
const encode = (text: string): string => [...text].map((c) => c.codePointAt(0)?.toString(16)).join(' ');

function ecmaEngine(flags: string) {
  return (input: string): string => {
    const [pattern = '', ...names] = input
      .split('\n')
      .slice(0, -1)
      .map((line) =>
        line
          .split(' ')
          .filter((c) => c !== '')
          .map((c) => String.fromCodePoint(parseInt(c, 16)))
          .join(''),
      );
    let regex: RegExp;
    try {
      regex = new RegExp(pattern, flags);
    } catch (error) {
      return `error ${String(error)}\n`;
    }
    return names.map((name) => (regex.test(name) ? '1\n' : '0\n')).join('');
  };
}

const ENGINES: Engine[] = [
  { name: 'ECMA-262', surrogates: true, run: ecmaEngine('') },
  { name: 'ECMA-262 with u', surrogates: true, run: ecmaEngine('u') },
  {
    name: "Python's re",
    surrogates: true,
    run: has('python3') ? processEngine('python3', [path.join(ENGINES_DIR, 'engine.py')]) : null,
  },
  {
    name: "Java's java.util.regex",
    surrogates: true,
    run: has('java') ? processEngine('java', [path.join(ENGINES_DIR, 'Engine.java')]) : null,
  },
  { name: "Go's regexp", surrogates: false, run: null },
  { name: "Rust's regex", surrogates: false, run: null },
];

/** Verdicts of one engine, or why the pattern does not compile. */
function search(engine: Engine, pattern: string, names: string[]): boolean[] | string {
  if (engine.run === null) throw new Error(`${engine.name} is not installed`);
  const output = engine.run([pattern, ...names].map(encode).join('\n') + '\n');
  if (output.startsWith('error')) return output.trim();
  return output
    .split('\n')
    .slice(0, -1)
    .map((line) => line === '1');
}

const document: unknown = JSON.parse(readFileSync('docs/openapi.json', 'utf8'));

/** Every `pattern` in the document, with where it is. */
function patternsOf(value: unknown, at: string): { at: string; pattern: string }[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    key === 'pattern' && typeof inner === 'string' ? [{ at, pattern: inner }] : patternsOf(inner, `${at}/${key}`),
  );
}
const PATTERNS = patternsOf(document, '#');
const NAME_SCHEMA = '#/components/schemas/NewPet/properties/name';
const namePattern = PATTERNS.find(({ at }) => at === NAME_SCHEMA)?.pattern ?? '';
const nameNotPattern = PATTERNS.find(({ at }) => at === `${NAME_SCHEMA}/not`)?.pattern ?? '';

const isLoneSurrogateIn = (name: string): boolean => !name.isWellFormed();
const codePoints = (name: string): number => [...name].length;

const SAMPLES: string[] = [
  ...['Rex', 'Zoë 🐕', 'Renée', "O'Brien", 'Rex Jr.', ' Rex ', 'a', 'Ünal', 'Ōkami', 'Χαρά', 'Мурка', '小白'],
  // Emoji: sequences with joiners and variation selectors, flags, tags, skin tones.
  ...['🐕', '🐈\u200d⬛', '❤\ufe0f', '🇫🇷', '\u{1f3f4}\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f}', '👍🏽'],
  // Combining marks, joiners where they may and may not stand.
  ...['Zoe\u0308', '\u0301', 'e\u0301\u0301', 'می\u200cخواهم', '\u200d', ' \u200dx', 'x\u200d', 'x \ufe0f', '\u034f'],
  // Control characters, the tester's finding among them; line breaks anywhere.
  ...['m\u000eFZ', 'Rex\u0000', '\tRex', 'Re\nx', '\u007f', '\u009f', 'a\u001bb'],
  ...['Rex\n', 'Rex\r\n', 'Rex\r', 'Rex\u0085', 'Rex\u2028', 'Rex\u2029', 'Rex\n\n', '\nRex', 'Rex \n', '\n'],
  // Blank: nothing, spaces only, including the less common ones.
  ...['', ' ', '   ', '\u00a0', '\u3000', '\u2800', '\u2000\u200a', ' \u1680 '],
  // Invisible format characters, fillers, noncharacters.
  ...['a\u200bb', '\u202eRex', '\ufeffRex', 'Rex\u2060', '\u3164', 'a\u3164', '\ufdd0', 'a\uffff', '\ufffe'],
  // Neighbours of the forbidden ranges, which are allowed.
  ...['\u00ae', '\u0606', '\u2030', '\ufdcf', '\ufdf0', '\ufffd', '\ud7ff', '\ue000', '\uffef'],
  // Lengths: 255 and 256 code points, in one and in two UTF-16 units each.
  ...['a'.repeat(255), 'a'.repeat(256), '🐕'.repeat(255), '🐕'.repeat(256), ' '.repeat(254) + 'a'],
  // Lone surrogates, where an engine's strings can hold them.
  ...['\ud800', 'a\udc00', '\udc00\ud800', 'x\ud83d', '\ud83d\ud83d\ude00'],
];

/** Names built from the characters the tables name and their neighbours (as pet.spec.ts does). */
const edges = [...PET_NAME_FORBIDDEN.flatMap(({ ranges }) => ranges), ...PET_NAME_SPACES, ...PET_NAME_MARKS]
  .flatMap(([first, last]) => [first - 1, first, last, last + 1])
  .filter((c) => c >= 0);
const GENERATED = fc.sample(
  fc
    .array(
      fc.oneof(
        fc.constantFrom(...edges).map((c) => String.fromCodePoint(c)),
        fc.constantFrom('a', 'é', ' ', '\n', '\u{1f415}', '\u{e0041}'),
        fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
      ),
      { maxLength: 6 },
    )
    .map((characters) => characters.join('')),
  { numRuns: 400, seed: 23 },
);

describe('the patterns of docs/openapi.json in every regex engine', () => {
  beforeAll(() => {
    const go = ENGINES.find(({ name }) => name === "Go's regexp");
    const rust = ENGINES.find(({ name }) => name === "Rust's regex");
    if (go) go.run = goEngine();
    if (rust) rust.run = rustEngine();
  }, 600_000);

  it('finds the name pattern and its `not`', () => {
    expect(namePattern).not.toBe('');
    expect(nameNotPattern).not.toBe('');
  });

  describe.each(ENGINES.map((engine) => [engine.name, engine] as const))('%s', (_name, engine) => {
    const available = (): boolean => {
      if (engine.run !== null) return true;
      if (REQUIRED) throw new Error(`${engine.name} is not installed (run scripts/ci/regex-engines.sh)`);
      if (!SKIPPED.has(engine.name))
        console.warn(`${engine.name}: skipped (${OTHER_ENGINES ? 'not installed here' : 'REGEX_ENGINES=all runs it'})`);
      SKIPPED.add(engine.name);
      return false;
    };

    it('compiles every pattern of the document', () => {
      if (!available()) return;

      const errors = PATTERNS.flatMap(({ at, pattern }) => {
        const verdicts = search(engine, pattern, ['x']);
        return typeof verdicts === 'string' ? [`${at}: ${verdicts}`] : [];
      });

      expect(errors).toEqual([]);
    });

    it("says of each name what the service says: the name's pattern, its `not` and its length", () => {
      if (!available()) return;
      const names = [...SAMPLES, ...GENERATED].filter((name) => engine.surrogates || name.isWellFormed());

      const matches = search(engine, namePattern, names);
      const breaks = search(engine, nameNotPattern, names);

      if (typeof matches === 'string' || typeof breaks === 'string') throw new Error(String(matches) + String(breaks));
      const disagreements = names.flatMap((name, i) => {
        const schema = matches[i] === true && breaks[i] === false && codePoints(name) >= 1 && codePoints(name) <= 255;
        const service = nameProblems(name).length === 0;
        // The one thing the document leaves to its description: no pattern all engines read can
        // name a surrogate, so the schema takes a lone surrogate for a visible character, and the
        // service refuses it.
        const expected = isLoneSurrogateIn(name) ? nameProblems(name.replace(/\p{Cs}/gu, 'x')).length === 0 : service;
        if (isLoneSurrogateIn(name)) expect(service).toBe(false);
        return schema === expected ? [] : [{ name: JSON.stringify(name), schema, service }];
      });

      expect(disagreements).toEqual([]);
      expect(names.length).toBeGreaterThan(300);
    });

    it('reads the other patterns alike (the idempotency key) on values without a final line break', () => {
      if (!available()) return;
      const values = ['5', '05', '-1', '1e3', ' 5', 'abc', 'key-1', 'k\u00e9y', 'a b', '', '\u0661', '5\u0000'];

      for (const { at, pattern } of PATTERNS.filter(({ at }) => !at.startsWith(NAME_SCHEMA))) {
        const verdicts = search(engine, pattern, values);

        expect({ at, verdicts }).toEqual({ at, verdicts: values.map((value) => new RegExp(pattern, 'u').test(value)) });
      }
    });
  });
});
