import type { SettledMark } from '../domain/pet-repository.js';

/**
 * Where the pets' ids are settled. Creates overlap, so id 8 may be committed while id 7 is still
 * in flight: a page that served 8 before 7 had settled would send a client paging on past 7 for
 * good. Pages serve only pets at or below a mark.
 */
export abstract class SettledMarks {
  /** The last mark read, if any. */
  abstract last(): SettledMark | null;
  /**
   * A mark read after this call: every create acknowledged before it is at or below the mark. When
   * the store cannot settle within its bound (a writer holds its transaction open), the last mark.
   */
  abstract fresh(): Promise<SettledMark>;
}
