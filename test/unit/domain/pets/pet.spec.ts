import {
  InvalidPetError,
  newPet,
  PET_NAME_FORBIDDEN,
  PET_NAME_MARKS,
  PET_NAME_SPACES,
} from '../../../../src/domain/pets/pet.js';

function problemsOf(input: Parameters<typeof newPet>[0]): string[] {
  try {
    newPet(input);
  } catch (error) {
    if (error instanceof InvalidPetError) return error.problems;
    throw error;
  }
  throw new Error('newPet accepted the input');
}

const CONTROL = 'name must not contain control characters such as tab, CR, LF or NUL';
const SEPARATOR = 'name must not contain line or paragraph separators';
const FORMAT = 'name must not contain invisible format characters such as zero-width spaces or direction overrides';
const FILLER = 'name must not contain invisible fillers such as U+3164 HANGUL FILLER';
const NONCHARACTER = 'name must not contain noncharacters';
const MARK = 'name may hold a joiner or variation selector only right after a visible character';
const BLANK = 'name must contain at least one visible character, not only spaces';

const bmp = (test: (character: string) => boolean): number[] =>
  Array.from({ length: 0x10000 }, (_, c) => c).filter((c) => test(String.fromCharCode(c)));
const inRanges = (ranges: readonly (readonly [number, number])[], c: number): boolean =>
  ranges.some(([first, last]) => c >= first && c <= last);
const forbidden = PET_NAME_FORBIDDEN.flatMap(({ ranges }) => ranges);

describe('newPet', () => {
  it('gives a pet the status "available" when none is sent', () => {
    expect(newPet({ name: 'Rex', categoryId: 1 })).toEqual({ name: 'Rex', categoryId: 1, status: 'available' });
  });

  it('keeps a status that is sent', () => {
    expect(newPet({ name: 'Rex', categoryId: 1, status: 'sold' }).status).toBe('sold');
  });

  it.each([['5'], [5.5], [0], [-1], [true], [null], [Number.MAX_SAFE_INTEGER + 1]])(
    'refuses categoryId %p',
    (categoryId) => {
      expect(problemsOf({ name: 'Rex', categoryId })).toEqual([
        'categoryId must be an integer from 1 to 9007199254740991',
      ]);
    },
  );

  it('accepts the largest safe categoryId', () => {
    expect(newPet({ name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER }).categoryId).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each([['lost'], [null], ['Available']])('refuses status %p', (status) => {
    expect(problemsOf({ name: 'Rex', categoryId: 1, status })).toEqual([
      'status must be one of available, pending, sold',
    ]);
  });

  it('reports every problem at once', () => {
    expect(problemsOf({ name: 7, categoryId: 'x', status: 'x' })).toHaveLength(3);
  });
});

describe('the name rule', () => {
  it.each([
    ['Rex'],
    ['Zoë 🐕'],
    ['Renée'],
    ["O'Brien"],
    ['Rex Jr.'],
    ['Zoe\u0308'], // e + combining diaeresis
    ['  Rex  '],
    ['Пёс Барбос'],
    ['小黑'],
    ['\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645'], // Persian, with ZERO WIDTH NON-JOINER inside a word
    ['\u{1f408}\u200d\u2b1b'], // black cat: cat, ZERO WIDTH JOINER, black square
    ['\u{1f415}\u200d\u{1f9ba}'], // service dog
    ['\u2764\ufe0f'], // red heart: heart, VARIATION SELECTOR-16
    ['\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'], // flag of Scotland: tag characters
    ['x\u2800'],
    ['\ufffd'],
  ])('accepts the name %j', (name) => {
    expect(newPet({ name, categoryId: 1 }).name).toBe(name);
  });

  it('refuses an empty name', () => {
    expect(problemsOf({ name: '', categoryId: 1 })).toEqual(['name must not be empty']);
  });

  it.each([[' '], ['   '], ['\u00a0\u3000'], ['\u2000\u200a\u202f\u205f'], ['\u1680'], ['\u2800']])(
    'refuses the blank name %j',
    (name) => {
      expect(problemsOf({ name, categoryId: 1 })).toEqual([BLANK]);
    },
  );

  it.each([
    ['Re\u0000x', CONTROL, 'U+0000', 3],
    ['\t', CONTROL, 'U+0009', 1],
    ['Rex\n', CONTROL, 'U+000A', 4],
    ['a\r\nb', CONTROL, 'U+000D', 2],
    ['Rex\u001b[31m', CONTROL, 'U+001B', 4],
    ['Rex\u007f', CONTROL, 'U+007F', 4],
    ['\u0085', CONTROL, 'U+0085', 1],
    ['Rex\u2028', SEPARATOR, 'U+2028', 4],
    ['\u2029', SEPARATOR, 'U+2029', 1],
    ['\u200b', FORMAT, 'U+200B', 1],
    ['\u202egnp.exe', FORMAT, 'U+202E', 1],
    ['Rex\u200e', FORMAT, 'U+200E', 4],
    ['\u2066Rex\u2069', FORMAT, 'U+2066', 1],
    ['\ufeffRex', FORMAT, 'U+FEFF', 1],
    ['Re\u00adx', FORMAT, 'U+00AD', 3],
    ['Rex\u2060', FORMAT, 'U+2060', 4],
    ['\u3164', FILLER, 'U+3164', 1],
    ['\u115f\u1160', FILLER, 'U+115F', 1],
    ['Rex\uffa0', FILLER, 'U+FFA0', 4],
    ['\u17b4', FILLER, 'U+17B4', 1],
    ['Rex\uffff', NONCHARACTER, 'U+FFFF', 4],
    ['\ufdd0', NONCHARACTER, 'U+FDD0', 1],
  ])('refuses %j, naming the character and where it is', (name, problem, codePoint, position) => {
    expect(problemsOf({ name, categoryId: 1 })).toEqual([`${problem} (${codePoint} at character ${position})`]);
  });

  it.each([
    ['\u200dRex', 'U+200D', 1],
    ['\u200c', 'U+200C', 1],
    ['\ufe0f', 'U+FE0F', 1],
    ['Rex \u200d', 'U+200D', 5],
    ['\u{1f408} \u200d\u2b1b', 'U+200D', 3],
  ])('refuses %j: a joiner or variation selector that follows no visible character', (name, codePoint, position) => {
    expect(problemsOf({ name, categoryId: 1 })).toEqual([`${MARK} (${codePoint} at character ${position})`]);
  });

  it('counts the position in characters, not UTF-16 units', () => {
    expect(problemsOf({ name: '\u{1f415}\u{1f415}\u0000', categoryId: 1 })).toEqual([
      `${CONTROL} (U+0000 at character 3)`,
    ]);
  });

  it('accepts a name of 255 characters counted as code points, and refuses 256', () => {
    expect(newPet({ name: '🐕'.repeat(255), categoryId: 1 }).name).toHaveLength(510);
    expect(problemsOf({ name: 'a'.repeat(256), categoryId: 1 })).toEqual(['name must be at most 255 characters long']);
  });

  it.each([['\ud800'], ['a\udfff'], ['\udc00\ud800']])(
    'refuses the lone surrogate in %j instead of storing something else',
    (name) => {
      expect(problemsOf({ name, categoryId: 1 })).toEqual([
        'name must be well-formed Unicode text: it holds a lone surrogate',
      ]);
    },
  );

  it.each([[7], [null], [['Rex']], [{ first: 'Rex' }]])('refuses a name that is not a string: %p', (name) => {
    expect(problemsOf({ name, categoryId: 1 })).toEqual(['name must be a string']);
  });
});

describe('the name tables', () => {
  // The tables name code points explicitly, so that the rule does not move with the Unicode version
  // of the JavaScript engine. These tests fail when the engine's Unicode knows a character the
  // tables should have (a new format character, say): a change of the contract, made on purpose.
  it('refuse every control, format (but the two joiners), separator and noncharacter code point of the BMP', () => {
    const missing = bmp((c) => /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}]$/u.test(c)).filter(
      (c) => !inRanges(forbidden, c) && !inRanges(PET_NAME_MARKS, c),
    );

    expect(missing).toEqual([]);
  });

  it('count every white space and default-ignorable code point of the BMP as a space, a mark or forbidden', () => {
    const missing = bmp((c) => /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]$/u.test(c)).filter(
      (c) => !inRanges([...forbidden, ...PET_NAME_SPACES, ...PET_NAME_MARKS], c),
    );

    expect(missing).toEqual([]);
  });

  it('refuse nothing that is not control, format, separator, noncharacter or default-ignorable', () => {
    const overreach = bmp(
      (c) => !/^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}\p{Default_Ignorable_Code_Point}]$/u.test(c),
    ).filter((c) => inRanges(forbidden, c));

    expect(overreach).toEqual([]);
  });
});
