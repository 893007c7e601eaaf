import { expect } from '@jest/globals';
import {
  cursorProblems,
  limitProblems,
  ListPetsQueryPipe,
  onlyOnce,
} from '../../../../../src/interface/http/pets/list-pets-query.pipe.js';

const validateQuery = (value: unknown) => Promise.resolve().then(() => new ListPetsQueryPipe().transform(value));

describe('ListPetsQueryPipe', () => {
  it('accepts a query of digits within 1..100 and ignores unknown parameters', async () => {
    await expect(validateQuery({ limit: '100', status: 'pending', foo: 'bar' })).resolves.toEqual({
      limit: '100',
      status: 'pending',
    });
  });

  it.each([['0'], ['101'], ['1.5'], ['+5'], [' 5'], ['1e2'], ['abc'], ['']])('refuses limit=%j', async (limit) => {
    await expect(validateQuery({ limit })).rejects.toMatchObject({
      message: 'Invalid query: limit must be an integer from 1 to 100',
    });
  });

  it.each([['limit'], ['status'], ['cursor']])('refuses %s given twice', async (name) => {
    await expect(validateQuery({ [name]: ['sold', 'sold'] })).rejects.toMatchObject({
      message: `Invalid query: ${name} must be given only once`,
    });
  });

  it('names every problem of the query in one 400, in the order limit, status, cursor', async () => {
    await expect(validateQuery({ cursor: ['a', 'b'], status: 'lost', limit: '0' })).rejects.toMatchObject({
      status: 400,
      message:
        'Invalid query: limit must be an integer from 1 to 100; status must be one of available, pending, sold; cursor must be given only once',
    });
  });

  it('gives each known parameter as sent, and nothing of a parameter it does not know', async () => {
    const query = Object.assign(Object.create(null) as object, { limit: '007', cursor: 'c', constructor: 'x' });
    await expect(validateQuery(query)).resolves.toEqual({ limit: '007', status: undefined, cursor: 'c' });
    await expect(validateQuery({ status: 'sold' })).resolves.toEqual({ status: 'sold' });
  });
});

describe('the query rules', () => {
  it('accepts limit from 1 to 100, as text only', () => {
    expect(limitProblems('1')).toEqual([]);
    expect(limitProblems('100')).toEqual([]);
    expect(limitProblems(5)).toEqual(['limit must be an integer from 1 to 100']);
  });

  it('accepts a cursor only as text, and any parameter only once', () => {
    expect(cursorProblems('abc')).toEqual([]);
    expect(cursorProblems(5)).toEqual(['cursor must be a string']);
    expect(onlyOnce('cursor', cursorProblems)(['a', 'b'])).toEqual(['cursor must be given only once']);
    expect(onlyOnce('cursor', cursorProblems)('a')).toEqual([]);
  });
});
