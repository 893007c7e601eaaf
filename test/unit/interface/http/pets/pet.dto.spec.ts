import { expect } from '@jest/globals';
import fc from 'fast-check';
import {
  MAX_CATEGORY_ID,
  newPet,
  newPetProblems,
  PET_NAME_FORBIDDEN,
  PET_NAME_MARKS,
  PET_NAME_MAX_LENGTH,
  PET_NAME_SPACES,
  PET_STATUSES,
} from '../../../../../src/domain/pets/pet.js';
import { BodyValidationPipe } from '../../../../../src/interface/http/platform/body-validation.pipe.js';
import { apiErrorOf } from '../../../../../src/interface/http/pets/pet-errors.filter.js';
import { ListPetsQuery, NewPetRequest, toPetResponse } from '../../../../../src/interface/http/pets/pet.dto.js';
import { PET_NAME_LINE_BREAKS } from '../../../../../src/interface/http/pets/pet-name-pattern.js';
import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';

/** A createPet body, validated as the app validates it: the pipe it registers (APP_PIPE), on the route's DTO. */
const pipeBody = (value: unknown) =>
  new BodyValidationPipe().transform(value, { type: 'body', metatype: NewPetRequest, data: undefined });

/** A body as createPet takes it: the pipe, then the domain's newPet(), whose InvalidPetError is a 400 too. */
async function validateBody(value: unknown): Promise<unknown> {
  const body = await pipeBody(value);
  if (!(body instanceof NewPetRequest)) throw new Error('the pipe gave no NewPetRequest');
  try {
    return newPet({ name: body.name, categoryId: body.categoryId, status: body.status });
  } catch (error) {
    throw apiErrorOf(error);
  }
}

/** What the pipe says of a body: [] when it accepts it, else the problems its 400 names. */
async function verdictOf(body: unknown): Promise<string> {
  return pipeBody(body).then(
    () => '',
    (thrown: unknown) => {
      if (thrown instanceof ApiError && thrown.getStatus() === 400)
        return thrown.message.replace('Invalid request body: ', '');
      throw thrown;
    },
  );
}

/** The ApiError a body is refused with; fails the test if it is accepted or refused otherwise. */
async function bodyRefusal(value: unknown): Promise<ApiError> {
  const error = await validateBody(value).then(
    () => 'accepted',
    (thrown: unknown) => thrown,
  );
  if (error instanceof ApiError) return error;
  throw new Error(`expected an ApiError, got ${String(error)}`);
}

describe('NewPet by BodyValidationPipe', () => {
  it('accepts a valid NewPet', async () => {
    await expect(validateBody({ name: 'Rex', categoryId: 1, status: 'sold' })).resolves.toMatchObject({
      name: 'Rex',
      categoryId: 1,
      status: 'sold',
    });
  });

  it('names every offending field in one 400, an unknown one with the values the domain refuses', async () => {
    const error = await bodyRefusal({ name: '', categoryId: '5', status: null, categoryID: 5 });

    expect(error.getStatus()).toBe(400);
    for (const field of ['name', 'categoryId', 'status', 'categoryID']) expect(error.message).toContain(field);
  });

  it('refuses the values the domain refuses, in its words, one problem a field', async () => {
    await expect(pipeBody({ name: '', categoryId: '5', status: null })).rejects.toMatchObject({
      status: 400,
      message:
        'Invalid request body: name must not be empty; categoryId must be an integer from 1 to 9007199254740991; status must be one of available, pending, sold',
    });
  });

  it('names the character a name must not hold and where it is, as the domain does', async () => {
    await expect(pipeBody({ name: '\u{1f415}\u{1f415}\u0000', categoryId: 1 })).rejects.toMatchObject({
      message:
        'Invalid request body: name must not contain control characters such as tab, CR, LF or NUL (U+0000 at character 3)',
    });
  });

  it('names the unknown fields first, then the values, in one 400', async () => {
    await expect(pipeBody({ categoryID: 5, name: 7, categoryId: 0 })).rejects.toMatchObject({
      message:
        'Invalid request body: "categoryID" is not a known field; name must be a string; categoryId must be an integer from 1 to 9007199254740991',
    });
  });

  it('counts a name in code points, variation selectors included, as the store does', async () => {
    const heart = '\u2764\ufe0f';

    await expect(verdictOf({ name: heart.repeat(127) + 'x', categoryId: 1 })).resolves.toBe('');
    await expect(verdictOf({ name: heart.repeat(128), categoryId: 1 })).resolves.toBe(
      'name must be at most 255 characters long',
    );
    await expect(verdictOf({ name: '\u{1f415}'.repeat(255), categoryId: 1 })).resolves.toBe('');
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

  it('names a field named like an Object.prototype member in the same 400 as the other problems, first', async () => {
    const body: unknown = JSON.parse('{"name":7,"constructor":1,"categoryID":1,"categoryId":1}');

    await expect(pipeBody(body)).rejects.toMatchObject({
      message:
        'Invalid request body: "constructor" is not a known field; "categoryID" is not a known field; name must be a string',
    });
  });

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
    await expect(validateBody({})).rejects.toMatchObject({
      message: 'Invalid request body: name must be a string; categoryId must be an integer from 1 to 9007199254740991',
    });
  });

  it('gives a DTO instance, not the plain object', async () => {
    await expect(pipeBody({ name: 'Rex', categoryId: 1 })).resolves.toBeInstanceOf(NewPetRequest);
  });

  it('lets any other failure of the pipe through as it is', async () => {
    class Exploding {
      constructor() {
        throw new Error('boom');
      }
    }
    const error = await new BodyValidationPipe()
      .transform({}, { type: 'body', metatype: Exploding, data: undefined })
      .then(
        () => 'accepted',
        (thrown: unknown) => thrown,
      );

    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ message: 'boom' });
  });

  it('leaves a query to its own pipe: unknown parameters, prototype-named ones too, go through as they came', async () => {
    const query = { limit: 'x', foo: 'bar', constructor: 'y' };

    await expect(
      new BodyValidationPipe().transform(query, { type: 'query', metatype: ListPetsQuery, data: undefined }),
    ).resolves.toBe(query);
  });

  it('leaves a path parameter as it came', async () => {
    await expect(
      new BodyValidationPipe().transform('007', { type: 'param', metatype: String, data: 'petId' }),
    ).resolves.toBe('007');
  });
});

describe('NewPet by BodyValidationPipe and by newPet()', () => {
  const codePoint = (c: number) => String.fromCodePoint(c);
  const tables = [...PET_NAME_FORBIDDEN.flatMap(({ ranges }) => ranges), ...PET_NAME_SPACES, ...PET_NAME_MARKS];
  // Every code point the tables name at an edge, and its neighbours; line breaks; surrogates.
  const edge = fc.constantFrom(
    ...tables.flatMap(([first, last]) => [first - 1, first, last, last + 1]).filter((c) => c >= 0),
    ...PET_NAME_LINE_BREAKS.flat(),
    0xd800,
    0xdbff,
    0xdc00,
    0xdfff,
  );
  const character = fc.oneof(
    edge.map(codePoint),
    fc.constantFrom('a', 'é', ' ', '\u{1f415}', '\u{e0041}', '\ufe0f'),
    fc.integer({ min: 0, max: 0x10ffff }).map(codePoint),
  );
  const short = fc.array(character, { maxLength: 8 }).map((characters) => characters.join(''));
  // Around the length limit: characters of one and two UTF-16 units, and marks MaxLength would not count.
  const long = fc
    .tuple(
      fc.constantFrom('a', '\u{1f415}', 'a\ufe0f', '\u2764\ufe0f', ' '),
      fc.integer({ min: PET_NAME_MAX_LENGTH - 8, max: PET_NAME_MAX_LENGTH + 4 }),
      short,
    )
    .map(([unit, codePoints, tail]) => unit.repeat(Math.ceil(codePoints / [...unit].length)) + tail);
  const notAString = fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.constant(['Rex']), fc.object());
  const name = fc.oneof({ arbitrary: short, weight: 4 }, { arbitrary: long, weight: 2 }, notAString);

  const categoryId = fc.oneof(
    fc.integer({ min: -3, max: 3 }),
    fc.integer({ min: MAX_CATEGORY_ID - 3, max: MAX_CATEGORY_ID }).chain((n) => fc.constantFrom(n, n + 1, n + 2)),
    fc.double(),
    fc.constantFrom(-0, 1.5, Number.NaN, Infinity, '1', '5', null, true, [1], { id: 1 }),
  );
  const status = fc.oneof(
    fc.constantFrom(...PET_STATUSES),
    fc.constantFrom('Sold', 'available ', '', 'lost', null, 1, ['sold']),
    fc.string(),
  );
  // Each field present or not, as a client may send it.
  const bodies = fc.record({ name, categoryId, status }, { requiredKeys: [] });

  it('accept and refuse the same bodies, and the pipe words its 400 as newPet() does', async () => {
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        const problems = newPetProblems({ name: body.name, categoryId: body.categoryId, status: body.status });

        await expect(verdictOf(body)).resolves.toBe(problems.join('; '));
      }),
      { numRuns: 3_000 },
    );
  });
});

describe('toPetResponse', () => {
  it('gives the four fields of the Pet schema and nothing else the pet may carry', () => {
    const stored = { id: 7, name: 'Rex', categoryId: 1, status: 'sold' as const, createdAt: '2026-11-27' };

    expect(toPetResponse(stored)).toStrictEqual({ id: 7, name: 'Rex', categoryId: 1, status: 'sold' });
  });
});
