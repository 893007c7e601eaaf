import fc from 'fast-check';
import { Ajv, type ValidateFunction } from 'ajv';
import { authorized, json, useService } from '../support/server.js';

// The served document, taken at its word: requests are generated from the schemas and parameter
// rules of GET /openapi.json (not from our own list of good and bad names, which could drift with
// the code), and the service must accept exactly what the document accepts. The judge is ajv on
// the served schema: a body or query it accepts must get 2xx, one it refuses a 400 Error naming
// the field. A document that says less than the service does fails here.
//
// Valid cases follow every constraint the schema states; invalid ones break exactly one (a missing
// required property, an extra one, a wrong type, a bound, the pattern, the enum). Strings are drawn
// from the characters at the edges of every range the schema's pattern names, ordinary text, and a
// few generic trouble-makers; the expectation still comes from the schema alone.
//
// CONTRACT_RUNS (cases per operation, default 300) and CONTRACT_SEED override the defaults. Every
// disagreement is collected, grouped by kind with one example, and reported at the end.

const RUNS = process.env.CONTRACT_RUNS ? Number(process.env.CONTRACT_RUNS) : 300;
const SEED = process.env.CONTRACT_SEED ? Number(process.env.CONTRACT_SEED) : 20261122;

/** Generic trouble-makers for any string (not this service's rules): controls, spaces, invisibles, surrogates, astral. */
const TROUBLE = [
  0x0, 0x9, 0xa, 0xd, 0x20, 0x7f, 0x85, 0xa0, 0xad, 0x200b, 0x200d, 0x202e, 0x2028, 0x3000, 0x3164, 0xfeff, 0xfffd,
  0xffff, 0xd800, 0xdc00, 0xe000, 0x1f415, 0xe0041, 0x10ffff,
];

type Rules = Record<string, unknown>;
type Case<T> = { label: string; field: string | null; value: T };
/** A disagreement: its kind (what was sent, what the document says, what came back) and the request with the answer's message. */
type Finding = { kind: string; example: string };

const service = useService();

describe('the service against its own served OpenAPI document', () => {
  let document: Rules;
  /** ECMA-262 patterns read with the `u` flag (ajv's default) and without it, over UTF-16 code units (many other validators). */
  let unicodeAjv: Ajv;
  let codeUnitAjv: Ajv;

  beforeAll(async () => {
    document = asObject(await (await fetch(`${service.server.url}/openapi.json`)).json(), 'the document');
    // OpenAPI 3.0 schemas are JSON Schema with extra keywords (example, format int64): not strict.
    unicodeAjv = new Ajv({ strict: false, validateFormats: false, allErrors: true, unicodeRegExp: true });
    codeUnitAjv = new Ajv({ strict: false, validateFormats: false, allErrors: true, unicodeRegExp: false });
    unicodeAjv.addSchema(document, 'served');
    codeUnitAjv.addSchema(document, 'served');
  });

  /** A validator for the schema at this JSON pointer of the served document, under both readings of `pattern`. */
  function validatorAt(pointer: string[]): (value: unknown) => boolean {
    const ref = `served#/${pointer.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
    const compile = (ajv: Ajv): ValidateFunction => ajv.getSchema(ref) ?? fail(`no schema at ${ref}`);
    const [unicode, codeUnits] = [compile(unicodeAjv), compile(codeUnitAjv)];
    return (value) => {
      const verdict = unicode(value);
      if (codeUnits(value) !== verdict)
        portability.add(`${ref} reads ${JSON.stringify(value).slice(0, 120)} differently with and without the u flag`);
      return verdict;
    };
  }

  /** Values a pattern judged differently with and without the u flag: the document would not mean the same to every validator. */
  const portability = new Set<string>();
  beforeEach(() => portability.clear());

  /** A raw text against a pattern, under both readings. */
  function matches(pattern: string, raw: string): boolean {
    const verdict = new RegExp(pattern, 'u').test(raw);
    if (new RegExp(pattern).test(raw) !== verdict)
      portability.add(`${pattern} reads ${JSON.stringify(raw)} differently with and without the u flag`);
    return verdict;
  }

  it('createPet: every body the NewPet schema accepts is a 201, every body it refuses a 400 naming the field', async () => {
    const pointer = ['paths', '/pets', 'post', 'requestBody', 'content', 'application/json', 'schema'];
    const schema = resolve(document, at(document, pointer));
    const accepts = validatorAt(pointer);
    const properties = asObject(schema.properties ?? {}, 'properties');
    const propertyValid = (name: string) => validatorAt([...refPointer(at(document, pointer)), 'properties', name]);
    const cases = fc.sample(bodyCases(document, schema, properties, propertyValid), { numRuns: RUNS, seed: SEED });

    const findings: Finding[] = [];
    const tally = { accepted: 0, refused: 0 };
    for (const { label, field, value: body } of cases) {
      // Lone surrogates: no pattern that every regex engine compiles can name them, so the name's
      // description refuses them, not its pattern.
      const valid = accepts(body) && wellFormed(body);
      tally[valid ? 'accepted' : 'refused']++;
      const text = JSON.stringify(body);
      const response = await fetch(`${service.server.url}/v1/pets`, { method: 'POST', headers: json, body: text });
      const answer: unknown = await response.json();
      const problem = valid
        ? createdProblem(response.status, answer, body)
        : refusedProblem(response.status, answer, field);
      if (problem !== null)
        findings.push({
          kind: `${label}: the schema ${valid ? 'accepts' : 'refuses'} it, but ${problem}${shapeOf(errorMessage(answer))}`,
          example: `${text} -> ${response.status}${errorMessage(answer)}`,
        });
    }

    console.log(
      `openapi-contract: createPet, ${cases.length} generated bodies (${tally.accepted} the schema accepts, ${tally.refused} it refuses), ${findings.length} disagreements`,
    );
    expect(report(findings)).toBe('');
    expect([...portability]).toEqual([]);
  });

  it('listPets: every query the parameters accept is a 200, every query they refuse a 400 naming the parameter', async () => {
    const operation = ['paths', '/pets', 'get'];
    const parameters = asArray(at(document, [...operation, 'parameters']), 'parameters')
      .map((parameter, index) => ({ index, parameter: asObject(parameter, 'parameter') }))
      // A cursor is valid only when the service issued it: no schema can say so (it is in the description).
      .filter(({ parameter }) => parameter.in === 'query' && parameter.name !== 'cursor');
    const params = parameters.map(({ index, parameter }) => {
      const name = String(parameter.name);
      const schemaPath = [...operation, 'parameters', String(index), 'schema'];
      return {
        name,
        required: parameter.required === true,
        rules: resolve(document, at(document, schemaPath)),
        valid: validatorAt(schemaPath),
      };
    });
    const cases = fc.sample(queryCases(params), { numRuns: RUNS, seed: SEED });

    const findings: Finding[] = [];
    const tally = { accepted: 0, refused: 0 };
    for (const { label, field, value: query } of cases) {
      const valid = query.every(([name, raw]) => {
        const param = params.find((candidate) => candidate.name === name);
        return param === undefined || queryValueValid(raw, param.rules, param.valid, matches);
      });
      tally[valid ? 'accepted' : 'refused']++;
      const search = new URLSearchParams(query).toString();
      const response = await fetch(`${service.server.url}/v1/pets?${search}`, { headers: authorized });
      const answer: unknown = await response.json();
      const problem = valid
        ? response.status === 200 && Array.isArray(answer)
          ? null
          : `the service answered ${response.status}`
        : refusedProblem(response.status, answer, field);
      if (problem !== null)
        findings.push({
          kind: `${label}: the parameters ${valid ? 'accept' : 'refuse'} it, but ${problem}${shapeOf(errorMessage(answer))}`,
          example: `?${search} -> ${response.status}${errorMessage(answer)}`,
        });
    }

    console.log(
      `openapi-contract: listPets, ${cases.length} generated queries (${tally.accepted} the parameters accept, ${tally.refused} they refuse), ${findings.length} disagreements`,
    );
    expect(report(findings)).toBe('');
    expect([...portability]).toEqual([]);
  });
});

function bodyCases(
  document: Rules,
  schema: Rules,
  properties: Rules,
  propertyValid: (name: string) => (value: unknown) => boolean,
): fc.Arbitrary<Case<Record<string, unknown>>> {
  const required = asArray(schema.required ?? [], 'required').map(String);
  const names = Object.keys(properties);
  const rulesOf = (name: string) => resolve(document, properties[name]);
  const valueOf = (name: string) => validValue(rulesOf(name), propertyValid(name));
  // Optional properties are left out now and then.
  const valid: fc.Arbitrary<Record<string, unknown>> = fc
    .record(
      Object.fromEntries(
        names.map((name) => [
          name,
          required.includes(name) ? valueOf(name) : fc.option(valueOf(name), { freq: 3, nil: undefined }),
        ]),
      ),
    )
    .map((body) => Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined)));

  const violations: fc.Arbitrary<Case<Record<string, unknown>>>[] = [
    ...required.map((name) =>
      valid.map((body) => ({ label: `without required ${name}`, field: name, value: omit(body, name) })),
    ),
    fc.tuple(valid, extraPropertyName(names), fc.jsonValue({ maxDepth: 1 })).map(([body, extra, value]) => ({
      label: 'with a property the schema does not define',
      field: extra,
      value: { ...body, [extra]: value },
    })),
    ...names.map((name) =>
      fc.tuple(valid, invalidValue(rulesOf(name), propertyValid(name))).map(([body, [label, value]]) => ({
        label: `${name} ${label}`,
        field: name,
        value: { ...body, [name]: value },
      })),
    ),
  ];
  return fc.oneof(
    { weight: violations.length, arbitrary: valid.map((value) => ({ label: 'valid', field: null, value })) },
    ...violations.map((arbitrary) => ({ weight: 1, arbitrary })),
  );
}

/** A value the property's own schema accepts, built from its constraints. */
function validValue(rules: Rules, valid: (value: unknown) => boolean): fc.Arbitrary<unknown> {
  if (Array.isArray(rules.enum)) {
    const values: unknown[] = rules.enum;
    return fc.constantFrom(...values);
  }
  if (rules.type === 'integer') {
    const [min, max] = bounds(rules);
    return fc.oneof(
      fc.constantFrom(...[min, min + 1, max - 1, max].filter((n) => n >= min && n <= max)),
      fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number),
    );
  }
  if (rules.type === 'string') return stringCandidates(rules).filter((value) => valid(value));
  return fc.jsonValue().filter((value) => valid(value));
}

/** One constraint broken: the label says which. The schema still has the last word on whether it is invalid. */
function invalidValue(rules: Rules, valid: (value: unknown) => boolean): fc.Arbitrary<[string, unknown]> {
  const wrongType = fc.constantFrom<[string, unknown]>(
    ['as null', null],
    ['as a boolean', true],
    ['as an array', []],
    ['as an object', {}],
  );
  const kinds: fc.WeightedArbitrary<[string, unknown]>[] = [{ weight: 2, arbitrary: wrongType }];
  if (Array.isArray(rules.enum)) {
    const values = rules.enum.map(String);
    const outside = fc
      .oneof(
        fc.constantFrom(...values.flatMap((value) => [value.toUpperCase(), ` ${value}`, `${value} `, value.slice(1)])),
        fc.string({ maxLength: 10 }),
        fc.constant(''),
      )
      .filter((value) => !values.includes(value))
      .map((value): [string, unknown] => ['outside the enum', value]);
    kinds.push({ weight: 3, arbitrary: outside });
  }
  if (rules.type === 'integer') {
    const [min, max] = bounds(rules);
    const edges = fc.constantFrom<[string, unknown]>(
      ['below the minimum', min - 1],
      ['above the maximum', max + 1],
      ['as a fraction', min + 0.5],
      ['as a numeric string', String(min)],
      ['huge', 1e300],
    );
    kinds.push(
      { weight: 3, arbitrary: edges },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: -1_000_000, max: min - 1 })
          .map((n): [string, unknown] => ['below the minimum', n]),
      },
    );
  }
  if (rules.type === 'string') {
    kinds.push({ weight: 1, arbitrary: fc.constant<[string, unknown]>(['as a number', 5]) });
    const minLength = typeof rules.minLength === 'number' ? rules.minLength : 0;
    const maxLength = typeof rules.maxLength === 'number' ? rules.maxLength : null;
    if (minLength > 0)
      kinds.push({
        weight: 1,
        arbitrary: fc.constant<[string, unknown]>(['shorter than minLength', 'x'.repeat(minLength - 1)]),
      });
    if (maxLength !== null) {
      const longer = fc
        .tuple(fc.constantFrom('x', 'é', '🐕', '中'), fc.integer({ min: 1, max: 3 }))
        .map(([unit, extra]): [string, unknown] => ['longer than maxLength', unit.repeat(maxLength + extra)]);
      kinds.push({ weight: 1, arbitrary: longer });
    }
    const edges = patternEdges(rules.pattern);
    if (edges.length > 0) {
      // A valid string with one character at the edge of a range the pattern names: kept when the pattern refuses it.
      const breaking = fc
        .tuple(validValue(rules, valid), fc.constantFrom(...edges), fc.nat())
        .map(([value, unit, at]): string => {
          const text = String(value);
          const cut = at % (text.length + 1);
          return text.slice(0, cut) + unit + text.slice(cut);
        })
        .filter((value) => !valid(value) && codePoints(value) <= (maxLength ?? Infinity))
        .map((value): [string, unknown] => ['breaking the pattern', value]);
      // The richest constraint: most of a string's invalid cases.
      kinds.push({ weight: 8, arbitrary: breaking });
    }
  }
  return fc.oneof(...kinds);
}

/** Strings near the schema's length bounds, over ordinary text, the pattern's range edges and generic trouble-makers. */
function stringCandidates(rules: Rules): fc.Arbitrary<string> {
  const edges = patternEdges(rules.pattern);
  const unit = fc.oneof(
    { weight: 6, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
    { weight: 3, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).map(fromCodePoint) },
    { weight: 2, arbitrary: fc.constantFrom(...TROUBLE.map(fromCodePoint)) },
    ...(edges.length > 0 ? [{ weight: 3, arbitrary: fc.constantFrom(...edges) }] : []),
  );
  const minLength = typeof rules.minLength === 'number' ? rules.minLength : 0;
  const maxLength = typeof rules.maxLength === 'number' ? rules.maxLength : 300;
  const short = fc
    .array(unit, { minLength: Math.max(minLength, 1), maxLength: Math.min(maxLength, 12) })
    .map((units) => units.join(''));
  return fc.oneof(
    { weight: 6, arbitrary: short },
    // One unit, repeated: blank or invisible names are often made of one character.
    { weight: 2, arbitrary: fc.tuple(unit, fc.integer({ min: 1, max: 4 })).map(([one, times]) => one.repeat(times)) },
    // Padded with a single code point to just under, at, or just over maxLength.
    {
      weight: 1,
      arbitrary: fc
        .tuple(short, fc.constantFrom('x', 'é', '🐕', ' '), fc.constantFrom(-1, 0, 1))
        .map(([text, pad, delta]) => text + pad.repeat(Math.max(0, maxLength + delta - codePoints(text)))),
    },
  );
}

/** Every code point a pattern names with a \uXXXX escape, and its neighbours: the edges of its ranges. */
function patternEdges(pattern: unknown): string[] {
  if (typeof pattern !== 'string') return [];
  const named = [...pattern.matchAll(/\\u([0-9A-Fa-f]{4})/g)].map((match) => Number.parseInt(match[1] ?? '0', 16));
  return [...new Set(named.flatMap((c) => [c - 1, c, c + 1]).filter((c) => c >= 0 && c <= 0xffff))].map(fromCodePoint);
}

function extraPropertyName(known: string[]): fc.Arbitrary<string> {
  const variants = known.flatMap((name) => [
    name.toUpperCase(),
    `${name}s`,
    name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
    `${name.slice(0, 1).toUpperCase()}${name.slice(1)}`,
  ]);
  return fc
    .oneof(fc.constantFrom('id', 'nickname', ...variants), fc.stringMatching(/^[a-z][A-Za-z0-9]{0,15}$/))
    .filter((name) => !known.includes(name) && !(name in Object.prototype));
}

type Param = { name: string; required: boolean; rules: Rules; valid: (value: unknown) => boolean };

function queryCases(params: Param[]): fc.Arbitrary<Case<[string, string][]>> {
  const validRaw = (param: Param): fc.Arbitrary<string> => {
    if (Array.isArray(param.rules.enum)) return fc.constantFrom(...param.rules.enum.map(String));
    const [min, max] = bounds(param.rules);
    // Leading zeros are still decimal digits.
    return fc
      .tuple(fc.integer({ min, max }), fc.constantFrom('', '', '', '0', '00'))
      .map(([n, zeros]) => `${zeros}${n}`);
  };
  const invalidRaw = (param: Param): fc.Arbitrary<string> => {
    if (Array.isArray(param.rules.enum)) {
      const values = param.rules.enum.map(String);
      return fc
        .oneof(
          fc.constantFrom('', ...values.flatMap((value) => [value.toUpperCase(), `${value} `, `${value},${value}`])),
          fc.string({ maxLength: 10 }),
        )
        .filter((value) => !values.includes(value));
    }
    const [min, max] = bounds(param.rules);
    return fc.oneof(
      fc.constantFrom(
        String(min - 1),
        String(max + 1),
        `${min}.0`,
        `${min}.5`,
        `${min}e0`,
        `1e1`,
        `+${min}`,
        ` ${min}`,
        `${min} `,
        `-${min}`,
        '',
        'abc',
        '0x10',
        `${max}0`,
      ),
      fc.integer({ min: max + 1, max: 1_000_000 }).map(String),
    );
  };
  const valid = fc
    .tuple(
      ...params.map((param) => (param.required ? validRaw(param) : fc.option(validRaw(param), { freq: 3, nil: null }))),
    )
    .map((values) =>
      values.flatMap((value, index): [string, string][] =>
        value === null ? [] : [[params[index]?.name ?? '', value]],
      ),
    );
  return fc.oneof(
    { weight: params.length, arbitrary: valid.map((value) => ({ label: 'valid', field: null, value })) },
    ...params.map((param) => ({
      weight: 1,
      arbitrary: fc.tuple(valid, invalidRaw(param)).map(([query, raw]) => ({
        label: `${param.name} out of its rules`,
        field: param.name,
        value: [...query.filter(([name]) => name !== param.name), [param.name, raw] satisfies [string, string]],
      })),
    })),
  );
}

/**
 * A query value against its parameter schema: the raw text against `pattern` when there is one,
 * and the value it denotes against the rest. An integer's text is decimal digits, as the
 * parameter's description says: JSON Schema cannot (`pattern` applies to strings only).
 */
function queryValueValid(
  raw: string,
  rules: Rules,
  valid: (value: unknown) => boolean,
  matches: (pattern: string, raw: string) => boolean,
): boolean {
  if (typeof rules.pattern === 'string' && !matches(rules.pattern, raw)) return false;
  if (rules.type === 'integer') return /^[0-9]+$/.test(raw) && valid(Number(raw));
  if (rules.type === 'number') return /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(raw) && valid(Number(raw));
  return valid(raw);
}

function createdProblem(status: number, answer: unknown, body: Record<string, unknown>): string | null {
  if (status !== 201) return `the service answered ${status}`;
  const pet = asObject(answer, 'the created pet');
  for (const [name, value] of Object.entries(body))
    if (pet[name] !== value) return `the created pet has ${name} ${JSON.stringify(pet[name])}`;
  return null;
}

function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  return typeof value !== 'object' || value === null || Object.values(value).every(wellFormed);
}

function refusedProblem(status: number, answer: unknown, field: string | null): string | null {
  if (status !== 400) return `the service answered ${status}`;
  const error = asObject(answer, 'the error');
  if (error.code !== 'invalid_request' || error.status !== 400 || typeof error.message !== 'string')
    return `the 400 body is ${JSON.stringify(answer)}`;
  if (field !== null && !error.message.includes(field.slice(0, 40))) return `the message does not name ${field}`;
  return null;
}

function errorMessage(answer: unknown): string {
  return typeof answer === 'object' && answer !== null && 'message' in answer ? ` (${String(answer.message)})` : '';
}

/** A message with what varies from request to request (quoted field names, code points, positions) blotted out, to group by. */
function shapeOf(message: string): string {
  return message
    .replace(/"(?:[^"\\]|\\.)*"/g, '"…"')
    .replace(/U\+[0-9A-F]{4,6}/g, 'U+…')
    .replace(/\d+/g, 'N');
}

/** One line per kind of disagreement, with one example; empty when there is none. */
function report(findings: Finding[]): string {
  const kinds = new Map<string, { count: number; example: string }>();
  for (const { kind, example } of findings) {
    const known = kinds.get(kind);
    kinds.set(kind, { count: (known?.count ?? 0) + 1, example: known?.example ?? example });
  }
  return [...kinds]
    .map(([kind, { count, example }]) => `${count} x ${kind}\n    e.g. ${example.slice(0, 400)}`)
    .join('\n');
}

function asObject(value: unknown, what: string): Rules {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${what} is not an object`);
  return Object.fromEntries(Object.entries(value));
}

function asArray(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new Error(`${what} is not an array`);
  return value;
}

function at(value: unknown, path: string[]): unknown {
  let current = value;
  for (const part of path)
    current = Array.isArray(current) ? current[Number(part)] : asObject(current, path.join('/'))[part];
  return current;
}

/** The schema with its $ref followed and its allOf merged: the constraints a generator needs. */
function resolve(document: Rules, schema: unknown): Rules {
  const object = asObject(schema, 'a schema');
  if (typeof object.$ref === 'string')
    return resolve(document, at(document, object.$ref.replace(/^#\//, '').split('/')));
  const { allOf, ...rest } = object;
  if (!Array.isArray(allOf)) return rest;
  // Later parts win, as with Object.assign, and the schema's own keywords win over every part.
  const parts = [...allOf.map((part) => resolve(document, part)), rest];
  return Object.fromEntries(parts.flatMap((part) => Object.entries(part)));
}

/** Where a schema reached through $ref lives, as a JSON pointer. */
function refPointer(schema: unknown): string[] {
  const object = asObject(schema, 'a schema');
  return typeof object.$ref === 'string'
    ? object.$ref.replace(/^#\//, '').split('/')
    : fail('the request body schema is not a $ref');
}

function bounds(rules: Rules): [number, number] {
  return [
    typeof rules.minimum === 'number' ? rules.minimum : -1_000_000,
    typeof rules.maximum === 'number' ? rules.maximum : 1_000_000,
  ];
}

function omit(body: Record<string, unknown>, name: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([key]) => key !== name));
}

/** Any code point; a surrogate gives a lone surrogate. */
function fromCodePoint(c: number): string {
  return String.fromCodePoint(c);
}

function codePoints(text: string): number {
  return [...text].length;
}

function fail(message: string): never {
  throw new Error(message);
}
