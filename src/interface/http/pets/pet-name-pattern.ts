import { type CodePointRange, PET_NAME_FORBIDDEN, PET_NAME_MARKS, PET_NAME_SPACES } from '../../../domain/pets/pet.js';

/*
 * The domain's name rule (its tables) as regular expressions: for the API document, a pattern that
 * means the same in the engines client generators and validators use; for the DTO, one that says
 * the whole rule but its length in ECMA-262.
 */

/**
 * A code point as the pattern writes it: `\xHH` below U+0100, which every engine reads alike; above
 * it, the character itself, because no escape of such a code point is read by all of them (Go has
 * no `\uXXXX`, Python and ECMA-262 without `u` have no `\x{..}`).
 */
const patternChar = (codePoint: number): string =>
  codePoint < 0x100 ? `\\x${codePoint.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCodePoint(codePoint);
/** The ranges as the inside of a character class, adjacent ones merged. */
function charClass(ranges: readonly CodePointRange[]): string {
  const merged: [number, number][] = [];
  for (const [first, last] of [...ranges].sort(([a], [b]) => a - b)) {
    const previous = merged.at(-1);
    if (previous !== undefined && first <= previous[1] + 1) previous[1] = Math.max(previous[1], last);
    else merged.push([first, last]);
  }
  return merged
    .map(([first, last]) => (first === last ? patternChar(first) : `${patternChar(first)}-${patternChar(last)}`))
    .join('');
}
const SPACE = `[${charClass(PET_NAME_SPACES)}]`;
const MARK = `[${charClass(PET_NAME_MARKS)}]`;
const NOT_VISIBLE = charClass([
  ...PET_NAME_FORBIDDEN.flatMap(({ ranges }) => ranges),
  ...PET_NAME_SPACES,
  ...PET_NAME_MARKS,
]);
// Any other character: one code point, or in ECMA-262 without `u` one UTF-16 unit (a character
// beyond the BMP is then two of these in a row, and counts as visible all the same).
const VISIBLE = `[^${NOT_VISIBLE}]`;

/** Line breaks: the characters before which `$` also matches at the end in Python and Java. */
export const PET_NAME_LINE_BREAKS: readonly CodePointRange[] = [
  [0x000a, 0x000a],
  [0x000d, 0x000d],
  [0x0085, 0x0085],
  [0x2028, 0x2029],
];

/**
 * The name rule but its length, as a pattern that compiles and means the same in ECMA-262 (with
 * and without `u`), Python's `re`, Rust's `regex`, Go's `regexp` and Java's `java.util.regex`:
 * no lookaround (Go and Rust have none), no \s, \p{..}, \d or \w (their meanings differ), no
 * surrogate code point (Rust refuses them). Read as: visible characters, each after any spaces
 * and followed by any marks, then any spaces. Two things it cannot say alike everywhere, so it
 * accepts them and the description names them: lone surrogates (only a surrogate range could
 * refuse them), and line breaks at the end (`$` matches before a final one in Python and Java,
 * so the pattern allows them in every engine; PET_NAME_NOT_PATTERN refuses them anywhere).
 */
export const PET_NAME_PATTERN = `^(?:${SPACE}*${VISIBLE}${MARK}*)+${SPACE}*[${charClass(PET_NAME_LINE_BREAKS)}]*$`;

/** Matches a name holding a line break anywhere: the schema's `not`, for what `$` cannot refuse. */
export const PET_NAME_NOT_PATTERN = `[${charClass(PET_NAME_LINE_BREAKS)}]`;

/**
 * The same reading in ECMA-262 with the `u` flag, for the DTO, with the two gaps closed: there a
 * lone surrogate is a code point of its own, which the class of visible characters leaves out, and
 * `$` matches only at the very end. It says the whole rule but the length.
 */
export const PET_NAME_REGEX = new RegExp(`^(?:${SPACE}*[^${NOT_VISIBLE}\\uD800-\\uDFFF]${MARK}*)+${SPACE}*$`, 'u');
