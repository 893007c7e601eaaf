import fc from 'fast-check';
import {
  nameProblems,
  PET_NAME_FORBIDDEN,
  PET_NAME_MARKS,
  PET_NAME_SPACES,
} from '../../../../../src/domain/pets/pet.js';
import {
  PET_NAME_NOT_PATTERN,
  PET_NAME_PATTERN,
  PET_NAME_REGEX,
} from '../../../../../src/interface/http/pets/pet-name-pattern.js';

// Every character the tables name, and its neighbours; plain and astral characters; lone surrogates.
const edges = [...PET_NAME_FORBIDDEN.flatMap(({ ranges }) => ranges), ...PET_NAME_SPACES, ...PET_NAME_MARKS]
  .flatMap(([first, last]) => [first - 1, first, last, last + 1])
  .filter((c) => c >= 0);
const character = fc.oneof(
  fc.constantFrom(...edges).map((c) => String.fromCodePoint(c)),
  fc.constantFrom('a', 'é', ' ', '\n', '\u{1f415}', '\u{e0041}', '\ud800', '\udc00'),
  fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
);
const names = fc.array(character, { maxLength: 8 }).map((characters) => characters.join(''));

describe('PET_NAME_PATTERN', () => {
  it('with its `not`, accepts exactly the names the rule accepts (up to the length), with the u flag and without', () => {
    const legacy = new RegExp(PET_NAME_PATTERN);
    const unicode = new RegExp(PET_NAME_PATTERN, 'u');
    const lineBreak = new RegExp(PET_NAME_NOT_PATTERN);

    fc.assert(
      fc.property(names, (name) => {
        // No pattern every engine reads can name a surrogate: a lone one passes as visible (the
        // description says the rest), and the rule refuses it.
        const valid = nameProblems(name.replace(/\p{Cs}/gu, 'x')).length === 0;
        expect(legacy.test(name) && !lineBreak.test(name)).toBe(valid);
        expect(unicode.test(name) && !lineBreak.test(name)).toBe(valid);
      }),
      { numRuns: 5_000 },
    );
  });

  it('is written with \\xHH escapes and plain characters only: no \\u, \\s, \\p{..}, \\d or \\w, whose meaning or support differs between engines', () => {
    expect(PET_NAME_PATTERN.replace(/\\x[0-9A-F]{2}/g, '')).not.toMatch(/\\/);
  });

  it('writes the code points below U+0100 as \\xHH, never as raw control characters or spaces', () => {
    const raw = [...PET_NAME_PATTERN]
      .map((c) => c.codePointAt(0) ?? 0)
      .filter((c) => c <= 0x20 || (c >= 0x7f && c <= 0xa0));

    expect(raw).toEqual([]);
    expect(PET_NAME_NOT_PATTERN).toBe('[\\x0A\\x0D\\x85\u2028-\u2029]');
  });

  it("leaves a final line break to its `not`, since Python's and Java's $ match before one", () => {
    expect(new RegExp(PET_NAME_PATTERN).test('Rex\n')).toBe(true);
    expect(new RegExp(PET_NAME_NOT_PATTERN).test('Rex\n')).toBe(true);
    expect(new RegExp(PET_NAME_NOT_PATTERN).test('Rex')).toBe(false);
  });

  it('stays linear on long blank runs (no catastrophic backtracking)', () => {
    const started = performance.now();

    new RegExp(PET_NAME_PATTERN).test(`x${' '.repeat(16_000)}\u0000`);

    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('PET_NAME_REGEX', () => {
  it('accepts exactly the names the rule accepts (up to the length), lone surrogates and final line breaks included', () => {
    fc.assert(
      fc.property(names, (name) => {
        expect(PET_NAME_REGEX.test(name)).toBe(nameProblems(name).length === 0);
      }),
      { numRuns: 5_000 },
    );
  });

  it.each([['Rex\n'], ['Rex\u2029'], ['Rex\ud800'], ['\udc00Rex'], ['\ud83d']])(
    'refuses %j, which the portable pattern lets through',
    (name) => {
      expect(PET_NAME_REGEX.test(name)).toBe(false);
    },
  );

  it('counts a character beyond U+FFFF as one visible character', () => {
    expect(PET_NAME_REGEX.test('\u{1f415}\u200d\u{1f9ba}')).toBe(true);
  });

  it('stays linear on long blank runs (no catastrophic backtracking)', () => {
    const started = performance.now();

    PET_NAME_REGEX.test(`x${' '.repeat(16_000)}\u0000`);

    expect(performance.now() - started).toBeLessThan(1000);
  });
});
