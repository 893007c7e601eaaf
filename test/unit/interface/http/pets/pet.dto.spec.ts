import { expect } from '@jest/globals';
import { validate } from 'class-validator';
import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';
import {
  BodyValidationPipe,
  cursorProblems,
  limitProblems,
  ListPetsQueryPipe,
  NewPetRequest,
  onlyOnce,
  quoteField,
  SatisfiesRule,
} from '../../../../../src/interface/http/pets/pet.dto.js';
import { InvalidPetError, newPet, newPetProblems } from '../../../../../src/domain/pets/pet.js';
import { apiErrorOf } from '../../../../../src/interface/http/pets/pets.controller.js';

const pipeBody = (value: unknown) =>
  new BodyValidationPipe().transform(value, { type: 'body', metatype: NewPetRequest });

/** A body as createPet takes it: the pipe, then the domain's newPet(), whose InvalidPetError is a 400 too. */
async function validateBody(value: unknown): Promise<unknown> {
  const body = (await pipeBody(value)) as NewPetRequest;
  try {
    return newPet({ name: body.name, categoryId: body.categoryId, status: body.status });
  } catch (error) {
    throw error instanceof InvalidPetError ? apiErrorOf(error) : error;
  }
}
const validateQuery = (value: unknown) => Promise.resolve().then(() => new ListPetsQueryPipe().transform(value));

/** The ApiError a body is refused with; fails the test if it is accepted or refused otherwise. */
async function bodyRefusal(value: unknown): Promise<ApiError> {
  const error = await validateBody(value).then(
    () => 'accepted',
    (thrown: unknown) => thrown,
  );
  if (error instanceof ApiError) return error;
  throw new Error(`expected an ApiError, got ${String(error)}`);
}

describe('request validation', () => {
  it('accepts a valid NewPet', async () => {
    await expect(validateBody({ name: 'Rex', categoryId: 1, status: 'sold' })).resolves.toMatchObject({
      name: 'Rex',
      categoryId: 1,
      status: 'sold',
    });
  });

  it('names every offending field in one 400, an unknown one with the values the domain refuses', async () => {
    const error = await bodyRefusal({ name: '', categoryId: '5', status: null, categoryID: 5 });

    expect(error.status).toBe(400);
    for (const field of ['name', 'categoryId', 'status', 'categoryID']) expect(error.message).toContain(field);
  });

  it('refuses the values the domain refuses in the pipe, in its words, field by field', async () => {
    await expect(pipeBody({ name: '', categoryId: '5', status: null })).rejects.toMatchObject({
      status: 400,
      message:
        'Invalid request body: name must not be empty; categoryId must be an integer from 1 to 9007199254740991; status must be one of available, pending, sold',
    });
  });

  it('names the unknown fields first, then the values, in one 400', async () => {
    await expect(pipeBody({ categoryID: 5, name: 7, categoryId: 0 })).rejects.toMatchObject({
      message:
        'Invalid request body: "categoryID" is not a known field; name must be a string; categoryId must be an integer from 1 to 9007199254740991',
    });
  });

  it.each<[Record<string, unknown>]>([
    [{ name: 'Rex', categoryId: 1 }],
    [{ name: 'Zoë 🐕', categoryId: Number.MAX_SAFE_INTEGER, status: 'pending' }],
    [{ name: ' ', categoryId: 1 }],
    [{ name: 'Re\u0000x', categoryId: 1 }],
    [{ name: '\u200dRex', categoryId: 1 }],
    [{ name: '\ud800', categoryId: 1 }],
    [{ name: 'x'.repeat(256), categoryId: 1 }],
    [{ name: ['Rex'], categoryId: 1.5 }],
    [{ categoryId: 9007199254740992 }],
    [{ name: 'Rex', categoryId: true, status: 'lost' }],
    [{ name: 'Rex', categoryId: 1, status: 'Sold' }],
  ])('agrees with the domain on %j', async (body) => {
    const domain = newPetProblems({ name: body.name, categoryId: body.categoryId, status: body.status });

    const refusal = await pipeBody(body).then(
      () => [],
      (thrown: unknown) => (thrown instanceof ApiError ? thrown.message.replace('Invalid request body: ', '') : thrown),
    );

    expect(refusal).toEqual(domain.length === 0 ? [] : domain.join('; '));
  });

  it('lets status be omitted, but not null', async () => {
    await expect(pipeBody({ name: 'Rex', categoryId: 1 })).resolves.toEqual(
      Object.assign(new NewPetRequest(), { name: 'Rex', categoryId: 1 }),
    );
    await expect(pipeBody({ name: 'Rex', categoryId: 1, status: null })).rejects.toMatchObject({
      message: 'Invalid request body: status must be one of available, pending, sold',
    });
  });

  it('refuses an id in the body', async () => {
    await expect(validateBody({ id: 5, name: 'Rex', categoryId: 1 })).rejects.toMatchObject({
      message: 'Invalid request body: "id" is not a known field',
    });
  });

  it('quotes and shortens an odd field name so that the message stays readable', async () => {
    await expect(validateBody({ '': 1, name: 'Rex', categoryId: 1 })).rejects.toMatchObject({
      message: 'Invalid request body: "" is not a known field',
    });
    await expect(validateBody({ ['x'.repeat(100)]: 1, name: 'Rex', categoryId: 1 })).rejects.toMatchObject({
      message: `Invalid request body: "${'x'.repeat(40)}…" is not a known field`,
    });
    await expect(validateBody({ 'a"b\n': 1, name: 'Rex', categoryId: 1 })).rejects.toMatchObject({
      message: String.raw`Invalid request body: "a\"b\n" is not a known field`,
    });
  });

  it.each([['constructor'], ['toString'], ['__proto__'], ['hasOwnProperty'], ['prototype']])(
    'refuses a field named like an Object.prototype member: %s',
    async (field) => {
      const body: unknown = JSON.parse(`{"name":"Rex","categoryId":1,"${field}":{"admin":true}}`);

      await expect(validateBody(body)).rejects.toMatchObject({
        message: `Invalid request body: "${field}" is not a known field`,
      });
    },
  );

  it.each([
    ['{"name":{"constructor":{}},"categoryId":1}', 'name must'],
    ['{"name":{"constructor":{"prototype":{"x":1}}},"categoryId":1}', 'name must'],
    ['{"name":[{"constructor":1}],"categoryId":1}', 'name must'],
    ['{"name":"Rex","categoryId":{"a":{"constructor":{}}}}', 'categoryId must'],
  ])('answers a nested constructor or prototype key with the 400 of its field: %s', async (json, problem) => {
    const error = await bodyRefusal(JSON.parse(json));

    expect(error.message).toContain(problem);
  });

  it('refuses required fields that are missing', async () => {
    await expect(validateBody({})).rejects.toMatchObject({ message: expect.stringMatching(/name.*categoryId/) });
  });

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

describe('validation pieces', () => {
  it('gives a DTO instance, not the plain object', async () => {
    await expect(pipeBody({ name: 'Rex', categoryId: 1 })).resolves.toBeInstanceOf(NewPetRequest);
  });

  it('lets any other failure of the pipe through as it is', async () => {
    class Exploding {
      constructor() {
        throw new Error('boom');
      }
    }
    const error = await new BodyValidationPipe().transform({}, { type: 'body', metatype: Exploding }).then(
      () => 'accepted',
      (thrown: unknown) => thrown,
    );

    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ message: 'boom' });
  });

  it('applies a rule as a class-validator constraint, whose message is what the rule says', async () => {
    const rule = (value: unknown) => (value === 'ok' ? [] : ['x must be ok', 'x must be short']);
    class Sample {
      @SatisfiesRule(rule)
      x!: unknown;
    }

    const refused = await validate(Object.assign(new Sample(), { x: 'no' }));
    const accepted = await validate(Object.assign(new Sample(), { x: 'ok' }));

    expect(refused.map((error) => [error.property, error.constraints])).toEqual([
      ['x', { satisfiesRule: 'x must be ok; x must be short' }],
    ]);
    expect(accepted).toEqual([]);
  });

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

  it('shortens a field name only beyond 40 characters', () => {
    expect(quoteField('x'.repeat(40))).toBe(`"${'x'.repeat(40)}"`);
    expect(quoteField('x'.repeat(41))).toBe(`"${'x'.repeat(40)}…"`);
  });

  it('refuses a cursor given twice', async () => {
    await expect(validateQuery({ cursor: ['a', 'b'] })).rejects.toMatchObject({
      message: 'Invalid query: cursor must be given only once',
    });
  });
});
