import { InvalidPetError } from '../../../src/domain/errors.js';
import { newPet } from '../../../src/domain/pet.js';

function problemsOf(input: Parameters<typeof newPet>[0]): string[] {
  try {
    newPet(input);
  } catch (error) {
    if (error instanceof InvalidPetError) return error.problems;
    throw error;
  }
  throw new Error('newPet accepted the input');
}

describe('newPet', () => {
  it('gives a pet the status "available" when none is sent', () => {
    expect(newPet({ name: 'Rex', categoryId: 1 })).toEqual({ name: 'Rex', categoryId: 1, status: 'available' });
  });

  it('keeps a status that is sent', () => {
    expect(newPet({ name: 'Rex', categoryId: 1, status: 'sold' }).status).toBe('sold');
  });

  it.each([[''], ['   '], ['\t\n'], ['\u0085'], ['\u3000\u00a0'], ['\ufeff\u2029']])('refuses a blank name %j', (name) => {
    expect(problemsOf({ name, categoryId: 1 })).toEqual(['name must contain at least one non-whitespace character']);
  });

  it('accepts a name of 255 characters counted as code points, and refuses 256', () => {
    expect(newPet({ name: '🐕'.repeat(255), categoryId: 1 }).name).toHaveLength(510);
    expect(problemsOf({ name: 'a'.repeat(256), categoryId: 1 })).toEqual(['name must be at most 255 characters long']);
  });

  it.each([['a\u0000b'], ['\ud800']])('refuses text PostgreSQL cannot keep exactly: %j', (name) => {
    expect(problemsOf({ name, categoryId: 1 })).toEqual(['name must be well-formed Unicode text without NUL characters']);
  });

  it.each([['5'], [5.5], [0], [-1], [true], [null], [Number.MAX_SAFE_INTEGER + 1]])('refuses categoryId %p', (categoryId) => {
    expect(problemsOf({ name: 'Rex', categoryId })).toEqual(['categoryId must be an integer from 1 to 9007199254740991']);
  });

  it('accepts the largest safe categoryId', () => {
    expect(newPet({ name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER }).categoryId).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each([['lost'], [null], ['Available']])('refuses status %p', (status) => {
    expect(problemsOf({ name: 'Rex', categoryId: 1, status })).toEqual(['status must be one of available, pending, sold']);
  });

  it('reports every problem at once', () => {
    expect(problemsOf({ name: 7, categoryId: 'x', status: 'x' })).toHaveLength(3);
  });
});
