export const PET_STATUSES = ['available', 'pending', 'sold'] as const;

export type PetStatus = (typeof PET_STATUSES)[number];

export const DEFAULT_PET_STATUS: PetStatus = 'available';

export function isPetStatus(value: unknown): value is PetStatus {
  return typeof value === 'string' && (PET_STATUSES as readonly string[]).includes(value);
}

export const PET_NAME_MAX_LENGTH = 255;
export const MIN_CATEGORY_ID = 1;
/** Largest id a JSON client reads exactly (2^53 - 1); larger int64 values would be rounded. */
export const MAX_CATEGORY_ID = Number.MAX_SAFE_INTEGER;
export const MAX_PET_ID = Number.MAX_SAFE_INTEGER;

export type NewPet = { name: string; categoryId: number; status: PetStatus };

export type Pet = NewPet & { id: number };

export type NewPetInput = { name: unknown; categoryId: unknown; status?: unknown };

/** A pet that breaks an invariant. `problems` name the fields, e.g. "name must not be blank". */
export class InvalidPetError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid pet: ${problems.join('; ')}`);
    this.name = 'InvalidPetError';
  }
}

export class PetNotFoundError extends Error {
  constructor(readonly id: number) {
    super(`Pet ${id} does not exist`);
    this.name = 'PetNotFoundError';
  }
}

/**
 * The one source of the pet rules: applies the default status and refuses anything the store
 * could not keep exactly. Every problem is reported at once.
 */
export function newPet(input: NewPetInput): NewPet {
  const problems = newPetProblems(input);
  if (problems.length > 0) throw new InvalidPetError(problems);
  return {
    name: input.name as string,
    categoryId: input.categoryId as number,
    status: isPetStatus(input.status) ? input.status : DEFAULT_PET_STATUS,
  };
}

/** What newPet() refuses `input` for, field by field; empty when it accepts it. */
export function newPetProblems(input: NewPetInput): string[] {
  return [
    ...nameProblems(input.name),
    ...categoryIdProblems(input.categoryId),
    ...(input.status === undefined ? [] : statusProblems(input.status)),
  ];
}

/** Code points from `first` to `last`, both included. */
export type CodePointRange = readonly [first: number, last: number];

/**
 * What a pet name may not hold anywhere, by kind (the words a 400 uses). All in the Basic
 * Multilingual Plane, so that the regular expressions of every common engine can state the rule
 * (the API document's pattern): beyond it, every character counts as visible.
 */
export const PET_NAME_FORBIDDEN: readonly { kind: string; ranges: readonly CodePointRange[] }[] = [
  // Cc: NUL, tab, CR, LF, ESC, DEL, NEL, ...
  {
    kind: 'control characters such as tab, CR, LF or NUL',
    ranges: [
      [0x0000, 0x001f],
      [0x007f, 0x009f],
    ],
  },
  { kind: 'line or paragraph separators', ranges: [[0x2028, 0x2029]] },
  // Cf but the two joiners: soft hyphen, zero-width space, direction marks, embeddings, overrides
  // and isolates, word joiner, invisible operators, BOM, interlinear annotation; U+2065 with them.
  {
    kind: 'invisible format characters such as zero-width spaces or direction overrides',
    ranges: [
      [0x00ad, 0x00ad],
      [0x0600, 0x0605],
      [0x061c, 0x061c],
      [0x06dd, 0x06dd],
      [0x070f, 0x070f],
      [0x0890, 0x0891],
      [0x08e2, 0x08e2],
      [0x180e, 0x180e],
      [0x200b, 0x200b],
      [0x200e, 0x200f],
      [0x202a, 0x202e],
      [0x2060, 0x206f],
      [0xfeff, 0xfeff],
      [0xfff9, 0xfffb],
    ],
  },
  // Default-ignorable letters that render as nothing: Hangul fillers, Khmer inherent vowels, and
  // the reserved U+FFF0..U+FFF8.
  {
    kind: 'invisible fillers such as U+3164 HANGUL FILLER',
    ranges: [
      [0x115f, 0x1160],
      [0x17b4, 0x17b5],
      [0x3164, 0x3164],
      [0xffa0, 0xffa0],
      [0xfff0, 0xfff8],
    ],
  },
  {
    kind: 'noncharacters',
    ranges: [
      [0xfdd0, 0xfdef],
      [0xfffe, 0xffff],
    ],
  },
];

/** Blank characters: allowed anywhere, but a name of nothing else is blank. White_Space (minus the line breaks above) and U+2800 BRAILLE PATTERN BLANK. */
export const PET_NAME_SPACES: readonly CodePointRange[] = [
  [0x0020, 0x0020],
  [0x00a0, 0x00a0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x2800, 0x2800],
  [0x3000, 0x3000],
];

/**
 * Joiners and variation selectors: allowed only right after a visible character or another of
 * them, as in the black cat emoji (U+1F408 U+200D U+2B1B), a red heart (U+2764 U+FE0F) or a
 * Persian word with U+200C, so that none can start a name, follow a space, or make up one.
 */
export const PET_NAME_MARKS: readonly CodePointRange[] = [
  [0x034f, 0x034f],
  [0x180b, 0x180d],
  [0x180f, 0x180f],
  [0x200c, 0x200d],
  [0xfe00, 0xfe0f],
];

const hexDigits = (codePoint: number): string => codePoint.toString(16).toUpperCase().padStart(4, '0');
/** A code point as Unicode writes it, e.g. U+00AD: in messages, and in the API document's words. */
export const codePointName = (codePoint: number): string => `U+${hexDigits(codePoint)}`;
const within = (ranges: readonly CodePointRange[], codePoint: number): boolean =>
  ranges.some(([first, last]) => codePoint >= first && codePoint <= last);

export function nameProblems(name: unknown): string[] {
  if (typeof name !== 'string') return ['name must be a string'];
  if (name === '') return ['name must not be empty'];
  // Counted in code points, as PostgreSQL counts varchar(255) and JSON Schema counts maxLength; a
  // name of at most 255 UTF-16 units cannot have more code points, so only longer ones are counted.
  if (name.length > PET_NAME_MAX_LENGTH && [...name].length > PET_NAME_MAX_LENGTH) {
    return [`name must be at most ${PET_NAME_MAX_LENGTH} characters long`];
  }
  // A lone surrogate would be stored as U+FFFD: refuse rather than store something other than what was sent.
  if (!name.isWellFormed()) return ['name must be well-formed Unicode text: it holds a lone surrogate'];
  let position = 0;
  // A mark may follow a visible character or another mark: not the start, not a space.
  let markMayFollow = false;
  let visible = false;
  for (const character of name) {
    position++;
    const codePoint = character.codePointAt(0) ?? 0;
    const forbidden = PET_NAME_FORBIDDEN.find(({ ranges }) => within(ranges, codePoint));
    if (forbidden !== undefined)
      return [`name must not contain ${forbidden.kind} (${codePointName(codePoint)} at character ${position})`];
    if (within(PET_NAME_MARKS, codePoint)) {
      if (!markMayFollow) {
        return [
          `name may hold a joiner or variation selector only right after a visible character (${codePointName(codePoint)} at character ${position})`,
        ];
      }
    } else if (within(PET_NAME_SPACES, codePoint)) {
      markMayFollow = false;
    } else {
      markMayFollow = true;
      visible = true;
    }
  }
  return visible ? [] : ['name must contain at least one visible character, not only spaces'];
}

export function categoryIdProblems(categoryId: unknown): string[] {
  if (
    typeof categoryId !== 'number' ||
    !Number.isInteger(categoryId) ||
    categoryId < MIN_CATEGORY_ID ||
    categoryId > MAX_CATEGORY_ID
  ) {
    return [`categoryId must be an integer from ${MIN_CATEGORY_ID} to ${MAX_CATEGORY_ID}`];
  }
  return [];
}

export function statusProblems(status: unknown): string[] {
  return isPetStatus(status) ? [] : [`status must be one of ${PET_STATUSES.join(', ')}`];
}
