import { readFileSync } from 'node:fs';
import http from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { curl, send, sentTarget, type Outcome, type WireRequest, type WireResponse } from '../support/fuzz-http.js';
import { startServer, TEST_API_KEY, type TestServer } from '../support/server.js';
import { ERROR_CODES } from '../support/error-codes.js';

// Property-based fuzzing of the whole HTTP surface: batches of generated requests, sent
// concurrently to the real stack on a real PostgreSQL. Every answer must be a well-formed Pet,
// Pets or Error body (never a 5xx, never a hang), the documented status where the contract fixes
// one, and at the end the table must hold exactly the pets that were answered 201.
//
// Every problem is collected, grouped by kind with a curl command that reproduces one instance,
// and the test fails at the end with the list: one run shows every kind of failure, not the first.
// FUZZ_SEED and FUZZ_RUNS (number of batches) override the fixed defaults; FUZZ_SHRINK=1 stops
// at the first failing batch instead and lets fast-check shrink it to a minimal counterexample.

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20261121;
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 1500;
const SHRINK = process.env.FUZZ_SHRINK === '1';
const TIMEOUT_MS = 10_000;
const BODY_LIMIT = 16 * 1024;
const MAX_ID = Number.MAX_SAFE_INTEGER;
/** The other key startServer() accepts. */
const SECOND_KEY = 'second-test-key-abcdefghijklmnop';
const STATUSES: readonly string[] = ['available', 'pending', 'sold'];
/** NewPet.name's pattern and its `not` in docs/openapi.json: the contract, not the code under test. */
const DOCUMENT: unknown = JSON.parse(readFileSync('docs/openapi.json', 'utf8'));
const field = (value: unknown, ...keys: string[]): unknown =>
  keys.reduce(
    (inner, key) => (typeof inner === 'object' && inner !== null ? Reflect.get(inner, key) : undefined),
    value,
  );
const NAME_SCHEMA = field(DOCUMENT, 'components', 'schemas', 'NewPet', 'properties', 'name');
const NAME_PATTERN = new RegExp(String(field(NAME_SCHEMA, 'pattern')));
const NAME_NOT_PATTERN = new RegExp(String(field(NAME_SCHEMA, 'not', 'pattern')));
const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';
const DEPRECATION = '@1795219200';

type Header = [string, string];
/** A header whose value is `value` written `times` times (kept short in counterexamples). */
type ExtraHeader = [name: string, value: string, times: number];
type Auth = { headers: Header[]; valid: boolean };
type NewPetFields = { name: string; categoryId: number; status: string };
type Pet = NewPetFields & { id: number };

type CursorRef = { pool: number; tamper: boolean; sameStatus: boolean };
type QueryParam = { name: string; value: string | CursorRef };
type ListPlan = {
  op: 'list';
  auth: Auth;
  path: string;
  params: QueryParam[];
  rawQuery: string | null;
  extra: ExtraHeader[];
};

type BodyPlan =
  /** A JSON object from raw key and value texts, in this order. */
  | { kind: 'object'; entries: Header[]; space: string; asciiOnly: boolean; bom: boolean }
  | { kind: 'text'; text: string }
  | { kind: 'nested'; shape: 'array' | 'object' | 'in-name' | 'in-status' | 'in-unknown'; depth: number }
  /** A valid NewPet padded with spaces to exactly this many bytes. */
  | { kind: 'padded'; bytes: number }
  | { kind: 'invalid-utf8' }
  | { kind: 'none' };
type ContentType = { value: string | null; kind: 'json' | 'not-json' | 'odd' | 'utf16' };
type Encoding = { header: string; mode: 'gzip' | 'deflate' | 'br' | 'identity' | 'unsupported' | 'garbage' };
type CreatePlan = {
  op: 'create';
  auth: Auth;
  contentType: ContentType;
  encoding: Encoding | null;
  body: BodyPlan;
  transport: 'fetch' | 'http';
  chunked: boolean;
  /** Idempotency-Key: one of a few shared keys (so that retries happen), or a raw value. */
  idempotencyKey: { shared: number } | { raw: string } | null;
  extra: ExtraHeader[];
};
/** A segment or path written `repeat` times (kept short in counterexamples). */
type GetPlan = {
  op: 'get';
  auth: Auth;
  id: { ledger: number } | { segment: string; repeat: number };
  suffix: string;
  extra: ExtraHeader[];
};
type OtherPlan = {
  op: 'other';
  auth: Auth;
  method: string;
  /** The path is `path` followed by `tail` written `repeat` times. */
  path: { path: string; tail: string; repeat: number };
  body: string | null;
  transport: 'fetch' | 'http';
  extra: ExtraHeader[];
  /** Adds a 20 kB header: more than Node's 16 KiB for the header section. */
  huge: boolean;
};
type Plan = ListPlan | CreatePlan | GetPlan | OtherPlan;

/** A plan made concrete against the current state, with what the contract says must come back. */
type Built = {
  plan: Plan;
  wire: WireRequest;
  /** Allowed statuses, or null where the contract does not fix one. */
  expected: number[] | null;
  why: string;
  /** The pets operation whose 2xx body must be a Pet or Pets. */
  route: 'list' | 'create' | 'get' | null;
  pet?: NewPetFields;
  limit?: number;
  statusFilter?: string;
  afterId?: number;
  petId?: number;
};

const latin1 = (minLength: number, maxLength: number): fc.Arbitrary<string> =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    minLength,
    maxLength,
  });

const header = (name: string, value: string): Header => [name, value];
const expand = (extra: ExtraHeader[]): Header[] => extra.map(([name, value, times]) => [name, value.repeat(times)]);

const validAuth: fc.Arbitrary<Auth> = fc
  .constantFrom(
    `Bearer ${TEST_API_KEY}`,
    `bearer ${TEST_API_KEY}`,
    `BEARER ${TEST_API_KEY}`,
    `BeArEr   ${TEST_API_KEY}`,
    `Bearer ${SECOND_KEY}`,
    `Bearer ${TEST_API_KEY}  `,
  )
  .map((value) => ({ headers: [header('Authorization', value)], valid: true }));

const oddAuthorization = [
  '',
  'Bearer',
  'Bearer ',
  'Bearer  ',
  `Bearer ${TEST_API_KEY}x`,
  `Bearer ${TEST_API_KEY.slice(0, -1)}`,
  `Bearer ${TEST_API_KEY.toUpperCase()}`,
  `Basic ${Buffer.from(`user:${TEST_API_KEY}`).toString('base64')}`,
  `Token ${TEST_API_KEY}`,
  TEST_API_KEY,
  `Bearer\t${TEST_API_KEY}`,
  `Bearer ${TEST_API_KEY} extra`,
  `Bearer ${TEST_API_KEY},`,
  `Bearer,${TEST_API_KEY}`,
  `Bearer=${TEST_API_KEY}`,
  `Bearer "${TEST_API_KEY}"`,
  `${TEST_API_KEY} Bearer`,
  `Bearer ${TEST_API_KEY}${SECOND_KEY}`,
  `Bearer ${Buffer.from(TEST_API_KEY).toString('base64')}`,
  `Bearer ${'a'.repeat(1000)}`,
  `Bearer é${TEST_API_KEY}`,
  `Bearer ${TEST_API_KEY}\u00a0`,
  `B\u00e9arer ${TEST_API_KEY}`,
  'Bearer null',
  'Bearer undefined',
];

const invalidAuth: fc.Arbitrary<Auth> = fc.oneof(
  fc.constant<Auth>({ headers: [], valid: false }),
  fc.constantFrom(...oddAuthorization).map((value) => ({ headers: [header('Authorization', value)], valid: false })),
  // Two Authorization fields: fetch joins them into "a, b".
  fc.constant<Auth>({
    headers: [header('Authorization', `Bearer ${TEST_API_KEY}`), header('authorization', `Bearer ${TEST_API_KEY}`)],
    valid: false,
  }),
  latin1(0, 80).map((token) => ({ headers: [header('Authorization', `Bearer ${token}`)], valid: false })),
  latin1(0, 80).map((value) => ({ headers: [header('Authorization', value)], valid: false })),
);

const auth: fc.Arbitrary<Auth> = fc.oneof({ weight: 7, arbitrary: validAuth }, { weight: 3, arbitrary: invalidAuth });

const oddHeader: fc.Arbitrary<ExtraHeader> = fc.oneof(
  fc.constantFrom<ExtraHeader>(
    ['Accept', 'application/xml', 1],
    ['Accept', 'text/html;q=0.9, */*;q=0', 1],
    ['Accept', '', 1],
    ['Accept-Encoding', 'gzip, br, zstd, *', 1],
    ['Accept-Charset', 'iso-8859-1', 1],
    ['Accept-Language', 'zz-ZZ, *;q=0', 1],
    ['X-Forwarded-For', '::1, 999.999.1.1, garbage', 1],
    ['X-Forwarded-Proto', 'gopher', 1],
    ['X-Forwarded-Host', 'evil.example', 1],
    ['Forwarded', 'for=unknown;proto=ftp', 1],
    ['X-HTTP-Method-Override', 'DELETE', 1],
    ['X-Method-Override', 'PUT', 1],
    ['Origin', 'null', 1],
    ['Origin', 'https://evil.example', 1],
    ['Referer', 'javascript:alert(1)', 1],
    ['Cookie', 'c', 4000],
    ['Range', 'bytes=0-0', 1],
    ['Range', 'bytes=99999999-', 1],
    ['If-Unmodified-Since', 'Thu, 01 Jan 1970 00:00:00 GMT', 1],
    ['If-None-Match', '*', 1],
    ['If-None-Match', 'W/"x"', 1],
    ['If-Modified-Since', 'Thu, 01 Jan 2099 00:00:00 GMT', 1],
    ['If-Match', '"nope"', 1],
    ['Cache-Control', 'no-transform, only-if-cached', 1],
    ['Via', '1.1 a, 1.1 b', 1],
    ['Max-Forwards', '0', 1],
    ['TE', 'trailers', 1],
    ['Content-Language', 'zz', 1],
    ['Content-Range', 'bytes 0-0/1', 1],
    ['User-Agent', '', 1],
    ['User-Agent', 'x', 3000],
    ['X-Request-Id', '\u00ff\u00fe\u00a0', 1],
    ['Prefer', 'return=minimal', 1],
    ['Api-Version', '999', 1],
  ),
  fc.tuple(fc.stringMatching(/^X-[A-Za-z0-9-]{1,20}$/), latin1(0, 200), fc.constant(1)),
);
const extraHeaders: fc.Arbitrary<ExtraHeader[]> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<ExtraHeader[]>([]) },
  { weight: 4, arbitrary: fc.array(oddHeader, { minLength: 1, maxLength: 3 }) },
);

const whitespace = [
  '\t',
  '\n',
  '\r',
  ' ',
  '\u000b',
  '\u000c',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u2028',
  '\u2029',
  '\u3000',
  '\ufeff',
  '\u200b',
  '\u0085',
];
const boundaryNames = [
  '',
  'Rex',
  'x'.repeat(255),
  'x'.repeat(256),
  '😀'.repeat(255),
  '😀'.repeat(256),
  'é'.repeat(255),
  'e\u0301'.repeat(128),
  '中'.repeat(255),
  ` ${'x'.repeat(253)} `,
  ' '.repeat(255),
  'a\u0000b',
  '\u0000',
  '\ud800',
  'a\udfff',
  '\udc00\ud800',
  '\ud83d\ude00',
  '\u0001\u007f',
  '\uffff\ufffe\u{10ffff}',
  "'; DROP TABLE pets; --",
  '%00%ff',
  '\\',
  '<script>alert(1)</script>',
  '\u202eevil',
];
const name: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 0, maxLength: 300 }) },
  { weight: 3, arbitrary: fc.constantFrom(...boundaryNames) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('x', '😀', 'é', '\u{10ffff}'), fc.integer({ min: 250, max: 260 }))
      .map(([unit, n]) => unit.repeat(n)),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(
        fc.oneof(
          fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
          fc.constantFrom('a', ' ', '\u0000', '😀'),
        ),
        { minLength: 1, maxLength: 8 },
      )
      .map((units) => units.join('')),
  },
  {
    weight: 1,
    arbitrary: fc.array(fc.constantFrom(...whitespace), { minLength: 1, maxLength: 10 }).map((units) => units.join('')),
  },
);

const jsonText: fc.Arbitrary<string> = fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value));

const nameText = fc.oneof(
  { weight: 9, arbitrary: name.map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: jsonText },
);
const categoryIdText: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.integer({ min: 1, max: MAX_ID }).map(String) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 20 }).map(String) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '1',
      '9007199254740991',
      '9007199254740992',
      '9007199254740993',
      '0',
      '-1',
      '-0',
      '1.0',
      '1e0',
      '1E2',
      '0.1e1',
      '1.5',
      '1e308',
      '1e309',
      '-1e309',
      '2e-324',
      '9007199254740991.0',
      '0.99999999999999999999',
      '100000000000000000000000',
      '"5"',
      '"1"',
      'true',
      'false',
      'null',
      '[1]',
      '{}',
      '""',
    ),
  },
  { weight: 1, arbitrary: fc.double().map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String) },
  { weight: 1, arbitrary: jsonText },
);
const statusText: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('"available"', '"pending"', '"sold"') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '"Available"',
      '"SOLD"',
      '""',
      'null',
      '1',
      '["sold"]',
      '"sold "',
      '" sold"',
      '"sold\\u0000"',
      '{}',
      'true',
      '"s\\u006fld"',
    ),
  },
  { weight: 1, arbitrary: fc.string().map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: jsonText },
);
const KNOWN_FIELDS: readonly string[] = ['name', 'categoryId', 'status'];
const unknownKeyText: fc.Arbitrary<string> = fc
  .oneof(
    fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__defineGetter__',
      'id',
      'categoryID',
      'Name',
      'NAME',
      'status ',
      '',
      'name\u0000',
      'category_id',
      'pad',
    ),
    fc.string({ maxLength: 12 }),
  )
  .filter((key) => !KNOWN_FIELDS.includes(key))
  .map((key) => JSON.stringify(key));

const objectBody: fc.Arbitrary<BodyPlan> = fc
  .record({
    name: fc.option(fc.tuple(fc.constantFrom('"name"', '"name"', '"name"', '"n\\u0061me"'), nameText), { freq: 12 }),
    categoryId: fc.option(fc.tuple(fc.constant('"categoryId"'), categoryIdText), { freq: 12 }),
    status: fc.option(fc.tuple(fc.constant('"status"'), statusText), { freq: 2 }),
    unknown: fc.oneof(
      { weight: 8, arbitrary: fc.constant([]) },
      { weight: 2, arbitrary: fc.array(fc.tuple(unknownKeyText, jsonText), { minLength: 1, maxLength: 3 }) },
    ),
    duplicate: fc.option(fc.tuple(fc.constantFrom('"name"', '"categoryId"', '"status"'), jsonText), {
      freq: 15,
      nil: null,
    }),
  })
  .chain(({ name, categoryId, status, unknown, duplicate }) => {
    const entries: Header[] = [...[name, categoryId, status, duplicate].filter((entry) => entry !== null), ...unknown];
    return fc.record({
      entries: fc.shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length }),
      space: fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  '),
      asciiOnly: fc.boolean(),
      bom: fc.integer({ min: 0, max: 30 }).map((n) => n === 0),
    });
  })
  .map(({ entries, space, asciiOnly, bom }) => ({ kind: 'object', entries, space, asciiOnly, bom }));

const validPetText = fc
  .record({
    name: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
    categoryId: fc.integer({ min: 1, max: 1000 }),
  })
  .map((pet) => JSON.stringify(pet));
const malformedText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "{'name':'Rex','categoryId':1}",
    '{"name":"Rex","categoryId":1,}',
    '{"name":"Rex" "categoryId":1}',
    '{name:"Rex",categoryId:1}',
    'NaN',
    '{"name":"Rex","categoryId":NaN}',
    '{"name":"Rex","categoryId":Infinity}',
    '{"name":"Rex","categoryId":01}',
    '{"name":"Rex","categoryId":1}x',
    '{"name":"Rex","categoryId":1}{}',
    '{"name":"Rex","categoryId":1}// comment',
    '/* c */{"name":"Rex","categoryId":1}',
    '{"name":"\\x41","categoryId":1}',
    '{"name":"\\u12","categoryId":1}',
    '{"name":"a\tb","categoryId":1}',
    '{"name":"a\nb","categoryId":1}',
    '{"name":"Rex","categoryId":1}\u0000',
    '\u0000',
    '}',
    '{"a":1',
    'undefined',
    '{"name":"Rex","categoryId":0x10}',
    '{"name":"Rex","categoryId":+1}',
    '{"name":"Rex","categoryId":.5}',
  ),
  fc.tuple(validPetText, fc.nat()).map(([text, n]) => text.slice(0, n % text.length)),
);
const nonObjectText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '[]',
    '[{"name":"Rex","categoryId":1}]',
    '"Rex"',
    '1',
    '-0',
    'null',
    'true',
    '""',
    '{}',
    ' ',
    '\n',
    '"\\ud800"',
  ),
  jsonText,
);

/** A NewPet the service must accept, in the same raw form. */
const validObjectBody: fc.Arbitrary<BodyPlan> = fc
  .record({
    name: fc
      .oneof(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
        fc.constantFrom(
          'x'.repeat(255),
          '😀'.repeat(255),
          'é'.repeat(255),
          '\ud83d\ude00',
          '\u0001\u007f',
          '\u200b',
          '\uffff\ufffe\u{10ffff}',
        ),
      )
      .filter((value) => nameIsValid(value)),
    categoryId: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.constantFrom(1, MAX_ID, MAX_ID - 1, 2 ** 31, 2 ** 32 + 1)),
    status: fc.option(fc.constantFrom('available', 'pending', 'sold'), { freq: 3 }),
    asciiOnly: fc.boolean(),
  })
  .map(({ name, categoryId, status, asciiOnly }): BodyPlan => ({
    kind: 'object',
    entries: [
      header('"name"', JSON.stringify(name)),
      header('"categoryId"', String(categoryId)),
      ...(status === null ? [] : [header('"status"', JSON.stringify(status))]),
    ],
    space: '',
    asciiOnly,
    bom: false,
  }));

const bodyPlan: fc.Arbitrary<BodyPlan> = fc.oneof(
  { weight: 40, arbitrary: validObjectBody },
  { weight: 60, arbitrary: objectBody },
  { weight: 6, arbitrary: nonObjectText.map((text): BodyPlan => ({ kind: 'text', text })) },
  { weight: 6, arbitrary: malformedText.map((text): BodyPlan => ({ kind: 'text', text })) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('nested'),
      shape: fc.constantFrom('array', 'object', 'in-name', 'in-status', 'in-unknown'),
      depth: fc.constantFrom(2, 100, 1000, 2000, 2700, 5000, 8000, 10_000, 50_000),
    }),
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(16_383, 16_384, 16_385, 20_000, 262_144, 2_000_000)
      .map((bytes): BodyPlan => ({ kind: 'padded', bytes })),
  },
  { weight: 1, arbitrary: fc.constant<BodyPlan>({ kind: 'invalid-utf8' }) },
  { weight: 1, arbitrary: fc.constant<BodyPlan>({ kind: 'none' }) },
);

const contentType: fc.Arbitrary<ContentType> = fc.oneof(
  {
    weight: 16,
    arbitrary: fc
      .constantFrom(
        'application/json',
        'application/json',
        'application/json; charset=utf-8',
        'application/json;charset=UTF-8',
        'APPLICATION/JSON',
        'Application/Json; Charset="utf-8"',
      )
      .map((value): ContentType => ({ value, kind: 'json' })),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(
        'text/plain',
        'text/plain; charset=utf-8',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/jsonx',
        'application/json-patch+json',
        'application/merge-patch+json',
        'application/vnd.api+json',
        'text/json',
        'application/javascript',
        'json',
        '*/*',
        'application/*',
        'application',
        '',
        'application/json; charset=latin1',
        'application/json; charset=iso-8859-1',
        'application/json; charset=us-ascii',
        'application/json; charset=utf8',
        'application/json; charset=utf-16',
        'application/json; charset=utf-7',
        'application/json; charset=utf-32',
        'application/json; charset=nonsense',
      )
      .map((value): ContentType => ({ value, kind: 'not-json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        'application/json;',
        'application/json; foo=bar',
        'application/json ;charset=utf-8',
        'application/json, text/plain',
        'application/json; charset=',
        'application/json; charset="utf-8',
        'application/jsön',
        'application/json; charset=utf-8; charset=latin1',
        'application/json\t; charset=utf-8',
      )
      .map((value): ContentType => ({ value, kind: 'odd' })),
  },
  { weight: 1, arbitrary: fc.constant<ContentType>({ value: null, kind: 'json' }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('application/json; charset=utf-16le', 'application/json; charset=UTF-16')
      .map((value): ContentType => ({ value, kind: 'utf16' })),
  },
);

const encoding: fc.Arbitrary<Encoding | null> = fc.oneof(
  { weight: 20, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<Encoding>(
      { header: 'gzip', mode: 'gzip' },
      { header: 'GZIP', mode: 'gzip' },
      { header: 'deflate', mode: 'deflate' },
      { header: 'br', mode: 'br' },
      { header: 'identity', mode: 'identity' },
      { header: 'compress', mode: 'unsupported' },
      { header: 'x-gzip', mode: 'unsupported' },
      { header: 'gzip, gzip', mode: 'unsupported' },
      { header: 'gzip', mode: 'garbage' },
      { header: 'br', mode: 'garbage' },
    ),
  },
);

const transport = fc.oneof(
  { weight: 9, arbitrary: fc.constant<'fetch' | 'http'>('fetch') },
  { weight: 1, arbitrary: fc.constant<'fetch' | 'http'>('http') },
);

const createPlan: fc.Arbitrary<CreatePlan> = fc.record({
  op: fc.constant('create'),
  auth,
  contentType,
  encoding,
  body: bodyPlan,
  transport,
  chunked: fc.boolean(),
  idempotencyKey: fc.oneof(
    { weight: 16, arbitrary: fc.constant(null) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 7 }).map((shared) => ({ shared })) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom('', ' ', 'a b', 'é', 'x'.repeat(255), 'x'.repeat(256), '"quoted"', '\u007f'),
          latin1(0, 40),
        )
        .map((raw) => ({ raw })),
    },
  ),
  extra: extraHeaders,
});

const limitValue = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '2',
    '20',
    '99',
    '100',
    '101',
    '-1',
    '1.0',
    '1.5',
    '1e2',
    '0x10',
    '010',
    '001',
    '0001',
    '',
    ' 1',
    '1 ',
    '+1',
    '٣',
    '１',
    '9007199254740991',
    '9007199254740992',
    '9007199254740993',
    '18446744073709551616',
    '1'.repeat(500),
    'NaN',
    'Infinity',
    'null',
    'true',
    '[1]',
  ),
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
);
const statusValue = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('available', 'pending', 'sold') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'Available',
      'AVAILABLE',
      ' sold',
      'sold ',
      '',
      'lost',
      'availabl',
      'null',
      'sold\u0000',
      'sоld',
      '["sold"]',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
);
const cursorValue: fc.Arbitrary<string | CursorRef> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      pool: fc.nat(),
      tamper: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      sameStatus: fc.integer({ min: 0, max: 4 }).map((n) => n !== 0),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      '.',
      '..',
      'a.b.c',
      'MS4xLg.AAAAAAAAAAAAAAAAAAAAAA',
      'A'.repeat(201),
      'MS45MDA3MTk5MjU0NzQwOTkzLg.x',
      '%',
      '\u0000',
    ),
  },
  { weight: 1, arbitrary: fc.base64String({ maxLength: 60 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
);
const queryParam: fc.Arbitrary<QueryParam> = fc.oneof(
  { weight: 4, arbitrary: limitValue.map((value) => ({ name: 'limit', value })) },
  { weight: 3, arbitrary: statusValue.map((value) => ({ name: 'status', value })) },
  { weight: 2, arbitrary: cursorValue.map((value) => ({ name: 'cursor', value })) },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.oneof(
        fc.constantFrom(
          'LIMIT',
          'Status',
          'limit[]',
          'status[0]',
          'cursor[a]',
          'page',
          'offset',
          'sort',
          '',
          'lim it',
          '__proto__',
          'constructor',
          'hasOwnProperty',
        ),
        fc.string({ unit: 'grapheme', maxLength: 10 }),
      ),
      value: fc.string({ unit: 'grapheme', maxLength: 20 }),
    }),
  },
);
const rawQuery: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 12, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '?limit=%',
      '?limit=%zz',
      '?%E0%A4%A=1',
      '?limit=%E0%A4%A',
      '?limit=1&&&',
      '?=',
      '?&',
      '?limit',
      '?status',
      '?limit=1#fragment',
      '?limit=%00',
      `?${'a=1&'.repeat(1500)}`,
      '?status=%E2%80%AE',
      '?limit=+1',
      '?limit=1%2B1',
      `?cursor=${'A'.repeat(5000)}`,
      '?limit=١',
      '?status=sölđ',
      '?limit=1&limit=2',
      '?status=sold&status=sold',
      '?limit[]=1',
      '?limit[a]=1',
      '?status[]=sold&status[]=pending',
      `?${'limit[]=1&'.repeat(30)}`,
      '?__proto__[limit]=1',
      '?constructor[prototype][x]=1',
      '?status=%ED%A0%80',
      '?cursor=%ED%A0%80',
      '?limit=%F0%9F%90',
    ),
  },
);
const listPlan: fc.Arbitrary<ListPlan> = fc.record({
  op: fc.constant('list'),
  auth,
  path: fc.constantFrom('/v1/pets', '/v1/pets', '/v1/pets', '/v1/pets', '/v1/pets/', '/V1/PETS'),
  params: fc.array(queryParam, { maxLength: 4 }),
  rawQuery,
  extra: extraHeaders,
});

const getPlan: fc.Arbitrary<GetPlan> = fc.record({
  op: fc.constant('get'),
  auth,
  id: fc.oneof(
    { weight: 6, arbitrary: fc.nat().map((ledger) => ({ ledger })) },
    {
      weight: 3,
      arbitrary: fc
        .constantFrom(
          '0',
          '-1',
          '1.5',
          '1e3',
          '0x1',
          '+1',
          ' 1',
          '%201',
          '%31',
          '%2B1',
          '9007199254740991',
          '9007199254740992',
          '9007199254740993',
          '99999999999999999999',
          '0000000000000001',
          '00000000000000001',
          '١',
          '１',
          '%00',
          '%',
          '%E0%A4%A',
          '%FF',
          '%C0%AF',
          '%ED%A0%80',
          '%F0%9F%90%95',
          '🐕',
          'é',
          'null',
          'undefined',
          'NaN',
          'Infinity',
          '..',
          '.',
          '%2e%2e',
          '%2F',
          '1%2F2',
          '1;x=2',
          '1,2',
          '[1]',
          "1'",
          '1 OR 1=1',
        )
        .map((segment) => ({ segment, repeat: 1 })),
    },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: MAX_ID }).map((n) => ({ segment: String(n), repeat: 1 })) },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: 'grapheme', minLength: 1, maxLength: 20 })
        .map((s) => ({ segment: encodeURIComponent(s), repeat: 1 })),
    },
    {
      weight: 1,
      arbitrary: fc.record({ segment: fc.constantFrom('1', 'x', '%'), repeat: fc.constantFrom(1000, 4000, 8000) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ segment: fc.constantFrom('é', '%41', '%E0%A4%A'), repeat: fc.constantFrom(300, 1000) }),
    },
  ),
  suffix: fc.constantFrom('', '', '', '', '/', '?limit=0', '?x=%', '#frag'),
  extra: extraHeaders,
});

/** Paths that no route serves, whatever the method and key. */
const UNROUTED = [
  '/',
  '/v1',
  '/v1/',
  '/v2/pets',
  '/v1/nope',
  '/v1/pets/1/photos',
  '/v1/pets/1/2/3',
  '/healthz/x',
  '/nope',
  '/favicon.ico',
  '/v1/pets;x=1',
  '/openapi',
  '/v1/openapi.json',
  '/robots.txt',
  '/.env',
  '/../../etc/passwd',
  '/v1/pëts',
  '/🐕',
];
const otherPlan: fc.Arbitrary<OtherPlan> = fc
  .record({
    op: fc.constant('other'),
    auth,
    method: fc.constantFrom(
      'PUT',
      'PATCH',
      'DELETE',
      'OPTIONS',
      'HEAD',
      'HEAD',
      'PROPFIND',
      'QUERY',
      'SEARCH',
      'LOCK',
      'PURGE',
      'MKCOL',
      'REPORT',
      'M-SEARCH',
      'GET',
      'GET',
      'POST',
      'get',
      'Get',
      'TRACE',
      'patch',
      'FOO',
    ),
    path: fc
      .oneof(
        {
          weight: 6,
          arbitrary: fc.constantFrom(
            ...UNROUTED,
            '/v1/pets',
            '/v1/pets',
            '/v1/pets/',
            '/v1/pets/1',
            '/v1/pets/1/',
            '/v1/pets/%E0%A4%A',
            '/V1/Pets/1',
          ),
        },
        {
          weight: 2,
          arbitrary: fc.constantFrom(
            '/healthz',
            '/readyz',
            '/openapi.json',
            '/openapi.yaml',
            '/docs',
            '/docs/',
            '/%',
            '/%zz',
            '/v1/%ff',
            '/v1/pets%2F1',
            '/*',
            '/v1/pets/..%2F..%2Fetc%2Fpasswd',
          ),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            '/docs/swagger-ui.css',
            '/docs/swagger-ui-bundle.js',
            '/docs/swagger-ui-init.js',
            '/docs/favicon-32x32.png',
            '/docs/nope.js',
          ),
        },
        { weight: 2, arbitrary: fc.webPath() },
      )
      .map((path) => ({ path, tail: '', repeat: 0 })),
    long: fc.oneof(
      { weight: 12, arbitrary: fc.constant(null) },
      {
        weight: 1,
        arbitrary: fc.record({
          path: fc.constantFrom('/x/', '/v1/', '/v1/pets/'),
          tail: fc.constantFrom('a', 'é', '%41', '/'),
          repeat: fc.integer({ min: 100, max: 1000 }),
        }),
      },
    ),
    body: fc.option(fc.constantFrom('{"name":"Rex","categoryId":1}', '', 'x'.repeat(100), 'null'), { freq: 2 }),
    transport,
    // Conditional and range requests reach the static files of Swagger UI too.
    extra: fc.oneof(
      { weight: 9, arbitrary: extraHeaders },
      {
        weight: 1,
        arbitrary: fc.constantFrom<ExtraHeader[]>(
          [['If-Match', '"nope"', 1]],
          [['If-Unmodified-Since', 'Thu, 01 Jan 1970 00:00:00 GMT', 1]],
          [['If-None-Match', '*', 1]],
          [['Range', 'bytes=99999999-', 1]],
          [['Range', 'bytes=5-1', 1]],
          [['Range', 'bytes=0-0,2-2', 1]],
        ),
      },
    ),
    huge: fc.integer({ min: 0, max: 30 }).map((n) => n === 0),
  })
  .map(({ long, ...rest }): OtherPlan => ({ ...rest, path: long ?? rest.path }));

const plan: fc.Arbitrary<Plan> = fc.oneof(
  { weight: 25, arbitrary: listPlan },
  { weight: 40, arbitrary: createPlan },
  { weight: 15, arbitrary: getPlan },
  { weight: 20, arbitrary: otherPlan },
);

// The contract, as README.md and decisions.md state it.

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nameIsValid(value: unknown): value is string {
  // The rule as the committed document states it: length in code points, and the pattern.
  return (
    typeof value === 'string' &&
    value.isWellFormed() &&
    [...value].length >= 1 &&
    [...value].length <= 255 &&
    NAME_PATTERN.test(value) &&
    !NAME_NOT_PATTERN.test(value)
  );
}

function categoryIdIsValid(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_ID;
}

function statusIsValid(value: unknown): value is string {
  return typeof value === 'string' && STATUSES.includes(value);
}

function parseJson(text: string): { value: unknown } | null {
  try {
    const value: unknown = JSON.parse(text);
    return { value };
  } catch {
    return null;
  }
}

/** What POST /v1/pets must answer for this JSON text read with a valid key and application/json. */
function judgeBody(text: string, bytes: number): { expected: number[]; why: string; pet?: NewPetFields } {
  if (bytes > BODY_LIMIT) return { expected: [413], why: `a body of ${bytes} bytes is over 16 KiB` };
  const parsed = parseJson(text.replace(/^\ufeff/, ''));
  if (parsed === null) return { expected: [400], why: 'malformed JSON' };
  const body = parsed.value;
  if (!isRecord(body)) return { expected: [400], why: 'JSON that is not an object' };
  const unknown = Object.keys(body).filter((key) => !KNOWN_FIELDS.includes(key));
  if (unknown.length > 0) return { expected: [400], why: 'an unknown field' };
  const { name, categoryId, status } = body;
  if (!nameIsValid(name)) return { expected: [400], why: 'invalid name' };
  if (!categoryIdIsValid(categoryId)) return { expected: [400], why: 'invalid categoryId' };
  if (status !== undefined && !statusIsValid(status)) return { expected: [400], why: 'invalid status' };
  return { expected: [201], why: 'a valid NewPet', pet: { name, categoryId, status: status ?? 'available' } };
}

/** The Pet in a response body, or null when it is not exactly one. */
function toPet(value: unknown): Pet | null {
  if (!isRecord(value) || Object.keys(value).sort().join(',') !== 'categoryId,id,name,status') return null;
  const { id, name, categoryId, status } = value;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return null;
  if (!nameIsValid(name) || !categoryIdIsValid(categoryId) || !statusIsValid(status)) return null;
  return { id, name, categoryId, status };
}

function errorBodyProblem(status: number, text: string): string | null {
  const parsed = parseJson(text);
  if (parsed === null) return 'the body is not JSON';
  const body = parsed.value;
  if (!isRecord(body) || Object.keys(body).sort().join(',') !== 'code,message,status')
    return 'the body is not exactly {code, message, status}';
  if (body.status !== status) return `body.status ${JSON.stringify(body.status)} is not the HTTP status`;
  if (typeof body.message !== 'string' || body.message.trim() === '') return 'body.message is not a non-empty string';
  // A status the decisions table does not list (431, 412, 416) falls back to the generic code of its class.
  const code = ERROR_CODES.get(status) ?? (status < 500 ? 'invalid_request' : 'internal_error');
  if (body.code !== code) return `body.code ${JSON.stringify(body.code)} is not ${code}`;
  return null;
}

/** `{route, segment}` of a path the pets routes serve. */
function petsRoute(target: string | null): { route: 'collection' } | { route: 'item'; segment: string } | null {
  if (target === null) return null;
  const path = target.replace(/[?#].*$/s, '');
  if (path === '/v1/pets' || path === '/v1/pets/') return { route: 'collection' };
  const item = /^\/v1\/pets\/([^/]+)\/?$/.exec(path);
  return item?.[1] === undefined ? null : { route: 'item', segment: item[1] };
}

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

let database: TestDatabase;
let server: TestServer;
/** Every pet answered 201, by id. */
const ledger = new Map<number, Pet>();
/** Cursors seen in Link headers, with the status they were issued for and the last id of their page. */
const cursors: { cursor: string; status: string | null; afterId: number }[] = [];
const stats = {
  requests: 0,
  unanswered: 0,
  refused: 0,
  byStatus: new Map<number, number>(),
  refusedBecause: new Map<string, number>(),
};
/** Problems by kind (their first line, with values blanked): how many, and the first one in full. */
const found = new Map<string, { count: number; got: Map<string, number>; example: string }>();

function record(problems: string[]): void {
  for (const text of problems) {
    // The first line says what is wrong; values are blanked so that one kind is one entry.
    const line = (text.split('\n')[0] ?? text).replace(/"(?:[^"\\]|\\.)*"/g, '"…"').replace(/\b(?!\d{3}\b)\d+\b/g, '#');
    const got = /^(.*), got (\d{3})$/.exec(line);
    const kind = got?.[1] ?? line;
    const seen = found.get(kind) ?? { count: 0, got: new Map<string, number>(), example: text };
    seen.count++;
    if (got?.[2] !== undefined) seen.got.set(got[2], (seen.got.get(got[2]) ?? 0) + 1);
    found.set(kind, seen);
  }
}

function build(plan: Plan, before: readonly number[]): Built {
  switch (plan.op) {
    case 'list':
      return buildList(plan);
    case 'create':
      return buildCreate(plan);
    case 'get':
      return buildGet(plan, before);
    case 'other':
      return buildOther(plan);
  }
}

function buildList(plan: ListPlan): Built {
  const statusParams = plan.params.filter((param) => param.name === 'status');
  const requestedStatus =
    statusParams.length === 1 && typeof statusParams[0]?.value === 'string' && statusIsValid(statusParams[0].value)
      ? statusParams[0].value
      : null;
  let cursorIssued = true;
  let afterId: number | undefined;
  const pairs = plan.params.map(({ name, value }): [string, string] => {
    if (typeof value === 'string') {
      // A cursor the service did not issue (a random string cannot carry its signature).
      if (name === 'cursor') cursorIssued = false;
      return [name, value];
    }
    const candidates = cursors.filter((cursor) => (cursor.status === requestedStatus) === value.sameStatus);
    const picked = candidates[value.pool % Math.max(candidates.length, 1)];
    if (picked === undefined || value.tamper) {
      cursorIssued = false;
      // Changing the first character changes the first byte of the signed payload.
      return [
        name,
        picked === undefined
          ? 'bm90LWlzc3VlZA.AAAAAAAAAAAAAAAAAAAAAA'
          : `${picked.cursor.startsWith('M') ? 'N' : 'M'}${picked.cursor.slice(1)}`,
      ];
    }
    cursorIssued &&= value.sameStatus;
    afterId = picked.afterId;
    return [name, picked.cursor];
  });
  const query = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
  const target = plan.path + (plan.rawQuery ?? (query === '' ? '' : `?${query}`));
  const wire: WireRequest = {
    transport: 'fetch',
    method: 'GET',
    target,
    headers: [...plan.auth.headers, ...expand(plan.extra)],
  };
  const base: Pick<Built, 'plan' | 'wire' | 'route'> = { plan, wire, route: plan.path === '/V1/PETS' ? null : 'list' };
  if (plan.path === '/V1/PETS') return { ...base, expected: null, why: 'upper-case path' };
  if (!plan.auth.valid) return { ...base, expected: [401], why: 'no valid key' };
  if (plan.rawQuery !== null) return { ...base, expected: null, why: 'odd raw query' };
  if (plan.params.some((param) => /[[\]]/.test(param.name)))
    return { ...base, expected: null, why: 'bracketed parameter name (query parser dependent)' };
  const values = (name: string): string[] => pairs.filter(([key]) => key === name).map(([, value]) => value);
  const [limits, statuses, cursorValues] = [values('limit'), values('status'), values('cursor')];
  if (limits.length > 1 || statuses.length > 1 || cursorValues.length > 1)
    return { ...base, expected: [400], why: 'a parameter given twice' };
  const limitText = limits[0];
  if (limitText !== undefined && /^\d{4,}$/.test(limitText) && Number(limitText) >= 1 && Number(limitText) <= 100) {
    return { ...base, expected: null, why: 'limit with leading zeros' };
  }
  const limit = limitText === undefined ? 20 : /^\d+$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= 100)) return { ...base, expected: [400], why: `limit ${JSON.stringify(limitText)}` };
  const status = statuses[0];
  if (status !== undefined && !statusIsValid(status))
    return { ...base, expected: [400], why: `status ${JSON.stringify(status)}` };
  if (cursorValues.length === 1 && !cursorIssued)
    return { ...base, expected: [400], why: 'a cursor the service did not issue for this status' };
  return { ...base, expected: [200], why: 'a valid list query', limit, statusFilter: status, afterId };
}

function bodyText(body: BodyPlan): string | null {
  const nested = (depth: number, open: string, inner: string, close: string): string =>
    open.repeat(depth) + inner + close.repeat(depth);
  switch (body.kind) {
    case 'object': {
      const { entries, space, asciiOnly, bom } = body;
      const members = entries.map(([key, value]) => `${key}${space}:${space}${value}`).join(`${space},${space}`);
      const text = `{${space}${members}${space}}`;
      // Escapes every non-ASCII UTF-16 unit: only string contents can hold them.
      const escaped = asciiOnly
        ? text.replace(/[\u007f-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
        : text;
      return (bom ? '\ufeff' : '') + escaped;
    }
    case 'text':
      return body.text;
    case 'nested':
      switch (body.shape) {
        case 'array':
          return nested(body.depth, '[', '', ']');
        case 'object':
          return nested(body.depth, '{"a":', '1', '}');
        case 'in-name':
          return `{"name":${nested(body.depth, '[', '', ']')},"categoryId":1}`;
        case 'in-status':
          return `{"name":"Rex","categoryId":1,"status":${nested(body.depth, '{"a":', '1', '}')}}`;
        case 'in-unknown':
          return `{"name":"Rex","categoryId":1,"x":${nested(body.depth, '[', '', ']')}}`;
      }
      break;
    case 'padded': {
      const pet = '{"name":"Rex","categoryId":1}';
      return pet + ' '.repeat(Math.max(body.bytes - pet.length, 0));
    }
    case 'invalid-utf8':
    case 'none':
      return null;
  }
  return null;
}

function buildCreate(plan: CreatePlan): Built {
  const text = bodyText(plan.body);
  const raw =
    plan.body.kind === 'invalid-utf8'
      ? Buffer.concat([Buffer.from('{"name":"R'), Buffer.from([0xff, 0xc0, 0xfe]), Buffer.from('x","categoryId":1}')])
      : text === null
        ? null
        : Buffer.from(text, plan.contentType.kind === 'utf16' ? 'utf16le' : 'utf8');
  const mode = plan.encoding?.mode;
  const wireBody =
    raw === null
      ? undefined
      : mode === 'gzip'
        ? gzipSync(raw)
        : mode === 'deflate'
          ? deflateSync(raw)
          : mode === 'br'
            ? brotliCompressSync(raw)
            : raw;
  const chunked = plan.transport === 'http' && plan.chunked && wireBody !== undefined && wireBody.length > 0;
  const headers: Header[] = [...plan.auth.headers];
  if (plan.contentType.value !== null) headers.push(header('Content-Type', plan.contentType.value));
  if (plan.encoding !== null) headers.push(header('Content-Encoding', plan.encoding.header));
  const idempotencyKey =
    plan.idempotencyKey === null
      ? null
      : 'shared' in plan.idempotencyKey
        ? `fuzz-${SEED}-${plan.idempotencyKey.shared}`
        : plan.idempotencyKey.raw;
  if (idempotencyKey !== null) headers.push(header('Idempotency-Key', idempotencyKey));
  // What the server sees: both clients and Node strip spaces and tabs around a field value.
  const sentKey = idempotencyKey?.replace(/^[ \t]+|[ \t]+$/g, '') ?? null;
  headers.push(...expand(plan.extra));
  const wire: WireRequest = {
    transport: plan.transport,
    method: 'POST',
    target: '/v1/pets',
    headers,
    body: wireBody,
    chunked,
  };
  const base: Pick<Built, 'plan' | 'wire' | 'route'> = { plan, wire, route: 'create' };
  // Node keeps the first of repeated Authorization lines; fetch joins them into one invalid value.
  if (plan.transport === 'http' && plan.auth.headers.length > 1)
    return { ...base, expected: null, why: 'repeated Authorization lines' };
  if (!plan.auth.valid) return { ...base, expected: [401], why: 'no valid key' };
  const hasBody = wireBody !== undefined && wireBody.length > 0;
  if (plan.contentType.value === null)
    return hasBody
      ? { ...base, expected: [415], why: 'a body without Content-Type' }
      : { ...base, expected: [400], why: 'no body' };
  if (!hasBody && plan.contentType.kind !== 'json' && /^application\/json\s*;/i.test(plan.contentType.value))
    return {
      ...base,
      expected: [400, 415],
      why: `no body, and Content-Type ${JSON.stringify(plan.contentType.value)}`,
    };
  if (plan.contentType.kind === 'not-json' || plan.contentType.kind === 'utf16') {
    return {
      ...base,
      expected: [415],
      why: `Content-Type ${JSON.stringify(plan.contentType.value)}: only application/json, charset utf-8`,
    };
  }
  if (plan.contentType.kind === 'odd') return { ...base, expected: null, why: 'odd Content-Type' };
  if (!hasBody) return { ...base, expected: [400], why: 'no body' };
  if (mode === 'unsupported')
    return { ...base, expected: [415], why: `Content-Encoding ${JSON.stringify(plan.encoding?.header)}` };
  // A Content-Length over the limit is refused before a byte is read, whatever the encoding.
  if (!chunked && wireBody.length > BODY_LIMIT)
    return { ...base, expected: [413], why: `a Content-Length of ${wireBody.length}, over 16 KiB` };
  if (mode === 'garbage') return { ...base, expected: [400], why: 'a body that does not decompress' };
  if (text === null || raw === null) return { ...base, expected: null, why: 'a body that is not UTF-8' };
  const judged = judgeBody(text, raw.length);
  if (sentKey === null || judged.expected.includes(413)) return { ...base, ...judged };
  // The key is checked once the body is read; a key seen before may replay (201), clash with a
  // different body (422) or with one still in flight (409).
  if (!/^[\x21-\x7e]{1,255}$/.test(sentKey))
    return { ...base, expected: [400], why: `Idempotency-Key ${JSON.stringify(sentKey.slice(0, 20))}` };
  return {
    ...base,
    ...judged,
    expected: [...judged.expected, 409, 422],
    why: `${judged.why}, with an Idempotency-Key`,
  };
}

function buildGet(plan: GetPlan, before: readonly number[]): Built {
  const segment =
    'ledger' in plan.id
      ? String(before[plan.id.ledger % Math.max(before.length, 1)] ?? 1)
      : plan.id.segment.repeat(plan.id.repeat);
  const wire: WireRequest = {
    transport: 'fetch',
    method: 'GET',
    target: `/v1/pets/${segment}${plan.suffix}`,
    headers: [...plan.auth.headers, ...expand(plan.extra)],
  };
  return { plan, wire, ...judgeItem(wire, plan.auth) };
}

/** What GET (or HEAD) /v1/pets/{petId} must answer. */
function judgeItem(wire: WireRequest, auth: Auth): Pick<Built, 'expected' | 'why' | 'route' | 'petId'> {
  const route = petsRoute(sentTarget(server.url, wire));
  if (route?.route !== 'item') return { expected: null, why: 'not the item route once normalised', route: null };
  const petId = decode(route.segment);
  if (petId === null)
    return {
      expected: auth.valid ? [400] : [400, 401],
      why: 'a petId that is not valid percent-encoded UTF-8',
      route: null,
    };
  if (!auth.valid) return { expected: [401], why: 'no valid key', route: 'get' };
  if (/^\d+$/.test(petId) && petId.length > 16 && Number(petId) <= MAX_ID)
    return { expected: null, why: 'a petId with leading zeros', route: 'get' };
  const id = /^\d+$/.test(petId) ? Number(petId) : NaN;
  if (!(id >= 1 && id <= MAX_ID))
    return {
      expected: [404],
      why: `petId ${JSON.stringify(petId.slice(0, 40))} is not a positive integer up to 2^53-1`,
      route: 'get',
    };
  return {
    expected: ledger.has(id) ? [200] : [200, 404],
    why: ledger.has(id) ? 'a pet answered 201 earlier' : 'a petId',
    route: 'get',
    petId: id,
  };
}

function buildOther(plan: OtherPlan): Built {
  const { method } = plan;
  const canHaveBody = !['GET', 'HEAD', 'TRACE'].includes(method.toUpperCase());
  const body = plan.body !== null && canHaveBody ? Buffer.from(plan.body) : undefined;
  const wire: WireRequest = {
    // fetch refuses TRACE.
    transport: method === 'TRACE' ? 'http' : plan.transport,
    method,
    target: plan.path.path + plan.path.tail.repeat(plan.path.repeat),
    headers: [
      ...plan.auth.headers,
      ...(body !== undefined ? [header('Content-Type', 'application/json')] : []),
      ...expand(plan.extra),
      ...(plan.huge ? [header('X-Huge', 'h'.repeat(20_000))] : []),
    ],
    body,
  };
  const target = sentTarget(server.url, wire);
  // node:http upper-cases every method, fetch only these six; the server answers a method outside http.METHODS itself.
  const sentMethod =
    wire.transport === 'http' || ['delete', 'get', 'head', 'options', 'post', 'put'].includes(method.toLowerCase())
      ? method.toUpperCase()
      : method;
  const base: Pick<Built, 'plan' | 'wire' | 'route'> = { plan, wire, route: null };
  if (plan.huge) return { ...base, expected: null, why: 'a header section over 16 KiB' };
  if (wire.transport === 'http' && plan.auth.headers.length > 1)
    return { ...base, expected: null, why: 'repeated Authorization lines' };
  if (!http.METHODS.includes(sentMethod))
    return { ...base, expected: null, why: `method ${JSON.stringify(sentMethod)}` };
  // Node's HTTP parser refuses raw bytes outside visible ASCII in the request line, before any route.
  if (wire.transport === 'http' && /[^\x21-\x7e]/.test(wire.target))
    return { ...base, expected: [400], why: 'raw bytes Node refuses in the path' };
  const path = target?.replace(/[?#].*$/s, '') ?? null;
  if (path !== null && (UNROUTED.includes(path) || path.startsWith('/x/'))) {
    // Every path under /v1 needs a key, whether a route serves it or not.
    if (!plan.auth.valid && (path === '/v1' || path.startsWith('/v1/')))
      return { ...base, expected: [401], why: 'no valid key, under /v1' };
    return { ...base, expected: [404], why: 'a path no route serves' };
  }
  const route = petsRoute(target);
  if (route === null) return { ...base, expected: null, why: 'some other path' };
  if (route.route === 'item' && (sentMethod === 'GET' || sentMethod === 'HEAD')) {
    const judged = judgeItem(wire, plan.auth);
    return { ...base, ...judged, route: sentMethod === 'GET' ? judged.route : null };
  }
  if (route.route === 'item' && decode(route.segment) === null)
    return {
      ...base,
      expected: plan.auth.valid ? [400] : [400, 401],
      why: 'a path that is not valid percent-encoding',
    };
  if (!plan.auth.valid) return { ...base, expected: [401], why: 'no valid key' };
  if (route.route === 'collection' && (sentMethod === 'GET' || sentMethod === 'HEAD'))
    return { ...base, expected: [200], why: 'list', route: sentMethod === 'GET' ? 'list' : null };
  if (route.route === 'collection' && sentMethod === 'POST')
    return { ...base, expected: null, why: 'create', route: 'create' };
  return { ...base, expected: [405], why: `${JSON.stringify(sentMethod)} on a pets route` };
}

function problem(built: Built, response: WireResponse | null, what: string): string {
  const answer =
    response === null
      ? ''
      : `\n    -> ${response.status} ${response.headers.get('content-type') ?? '(no Content-Type)'} ${response.body.slice(0, 300)}`;
  return `${what}\n    ${curl(server.url, built.wire)}${answer}`;
}

function checkResponse(built: Built, response: WireResponse): string[] {
  const problems: string[] = [];
  const fail = (what: string): void => {
    problems.push(problem(built, response, what));
  };
  const { status, headers, body } = response;
  const method = built.wire.method.toUpperCase();
  const conditional = built.wire.headers.some(([name]) => name.toLowerCase() === 'if-none-match');
  if (status >= 500) fail(`status ${status} where ${built.expected?.join(' or ') ?? 'no 5xx'} was due (${built.why})`);
  else if (
    built.expected !== null &&
    !built.expected.includes(status) &&
    !(status === 304 && conditional && built.expected.includes(200))
  ) {
    fail(`expected ${built.expected.join(' or ')} (${built.why}), got ${status}`);
  }
  if (status === 304 && conditional && method !== 'POST') return problems;
  if (status < 200 || status >= 300) {
    const defects = [
      ...(/^application\/json(;|$)/i.test(headers.get('content-type') ?? '')
        ? []
        : ['no Content-Type application/json']),
      ...(method === 'HEAD' ? [] : [errorBodyProblem(status, body)].filter((defect) => defect !== null)),
      ...(status === 401 && !(headers.get('www-authenticate') ?? '').startsWith('Bearer realm="petstore"')
        ? ['no WWW-Authenticate: Bearer realm="petstore"']
        : []),
      ...(status === 405 && !headers.has('allow') ? ['no Allow'] : []),
    ];
    if (defects.length > 0) fail(`a ${status} that breaks the Error contract: ${defects.join('; ')}`);
  }
  if (
    built.route === 'get' &&
    [200, 401, 404].includes(status) &&
    (headers.get('sunset') !== SUNSET || headers.get('deprecation') !== DEPRECATION)
  ) {
    fail('a getPet response without Sunset and Deprecation');
  }
  if (status < 200 || status >= 300 || built.route === null || method === 'HEAD') return problems;
  const parsed = parseJson(body);
  if (built.route === 'list') {
    const pets = parsed !== null && Array.isArray(parsed.value) ? parsed.value.map(toPet) : null;
    if (pets === null || pets.some((pet) => pet === null))
      return [...problems, problem(built, response, 'a 2xx of listPets that is not Pets')];
    const ids = pets.flatMap((pet) => (pet === null ? [] : [pet.id]));
    if (ids.some((id, i) => i > 0 && id <= (ids[i - 1] ?? 0))) fail('pets not in ascending id order');
    if (built.limit !== undefined && ids.length > built.limit)
      fail(`more pets than limit\n    ${ids.length} pets for limit ${built.limit}`);
    if (built.statusFilter !== undefined && pets.some((pet) => pet?.status !== built.statusFilter))
      fail('a pet whose status is not the status filter');
    if (built.afterId !== undefined && ids.some((id) => id <= (built.afterId ?? 0)))
      fail(`a pet at or before the cursor position\n    cursor after ${built.afterId}`);
    const link = headers.get('link');
    if (link !== undefined) {
      const next = /^<\/v1\/pets\?([^>]*)>; rel="next"$/.exec(link)?.[1];
      const params = new URLSearchParams(next ?? '');
      const cursor = params.get('cursor');
      const last = ids.at(-1);
      if (next === undefined || cursor === null || last === undefined) fail(`a malformed Link\n    ${link}`);
      else if (
        built.limit !== undefined &&
        (params.get('limit') !== String(built.limit) ||
          params.get('status') !== (built.statusFilter ?? null) ||
          ids.length !== built.limit)
      ) {
        fail(`a Link that does not repeat limit and status, or on a page that is not full\n    ${link}`);
      } else if (cursors.length < 5000) {
        cursors.push({ cursor, status: params.get('status'), afterId: last });
      }
    }
    return problems;
  }
  const pet = parsed === null ? null : toPet(parsed.value);
  if (pet === null) return [...problems, problem(built, response, `a ${status} that is not a Pet`)];
  if (built.route === 'create') {
    if (status !== 201) fail(`createPet answered ${status}, not 201`);
    if (headers.get('location') !== `/v1/pets/${pet.id}`)
      fail(`a Location that is not /v1/pets/{id}\n    ${headers.get('location')} for pet ${pet.id}`);
    if (
      built.pet !== undefined &&
      (pet.name !== built.pet.name || pet.categoryId !== built.pet.categoryId || pet.status !== built.pet.status)
    ) {
      fail(`the created pet is not what was sent\n    sent ${JSON.stringify(built.pet)}`);
    }
  }
  if (built.route === 'get' && built.petId !== undefined && pet.id !== built.petId)
    fail(`a different pet than the one asked for\n    asked for ${built.petId}, got ${pet.id}`);
  return problems;
}

async function runBatch(plans: Plan[]): Promise<void> {
  const before = [...ledger.keys()];
  const batch = plans.map((p) => build(p, before));
  const outcomes: Outcome[] = await Promise.all(batch.map((built) => send(server.url, built.wire, TIMEOUT_MS)));
  const problems: string[] = [];
  const answered: { built: Built; response: WireResponse }[] = [];
  batch.forEach((built, i) => {
    const outcome = outcomes[i];
    if (outcome === undefined) return;
    if (outcome.kind === 'refused') {
      stats.refused++;
      const reason = outcome.reason.replace(/\d+|".*"|'.*'/g, '…').slice(0, 90);
      stats.refusedBecause.set(reason, (stats.refusedBecause.get(reason) ?? 0) + 1);
      return;
    }
    if (outcome.kind === 'failed') {
      stats.unanswered++;
      problems.push(problem(built, null, `no response: ${outcome.reason}`));
      return;
    }
    stats.requests++;
    if (outcome.kind === 'contract') {
      // The answer itself is gone (the wrapper threw instead of returning it): report what it said.
      stats.byStatus.set(outcome.status, (stats.byStatus.get(outcome.status) ?? 0) + 1);
      problems.push(problem(built, null, outcome.reason));
      return;
    }
    const { response } = outcome;
    stats.byStatus.set(response.status, (stats.byStatus.get(response.status) ?? 0) + 1);
    answered.push({ built, response });
    // Record every 201 first (from whatever path and method), so that pets listed or fetched in the same batch can be judged.
    const pet = response.status === 201 ? toPet(parseJson(response.body)?.value) : null;
    // A replay (Idempotency-Key) repeats an earlier 201: judged below, once the whole batch is in.
    if (pet !== null && response.headers.get('idempotent-replayed') !== 'true') {
      if (ledger.has(pet.id)) problems.push(problem(built, response, `a pet id answered 201 twice\n    pet ${pet.id}`));
      ledger.set(pet.id, pet);
    }
  });
  for (const { built, response } of answered) {
    problems.push(...checkResponse(built, response));
    if (
      response.status !== 200 ||
      (built.route !== 'list' && built.route !== 'get') ||
      built.wire.method.toUpperCase() === 'HEAD'
    )
      continue;
    const parsed = parseJson(response.body);
    const values = parsed === null ? [] : Array.isArray(parsed.value) ? parsed.value : [parsed.value];
    for (const pet of values.map(toPet)) {
      const created = pet === null ? undefined : ledger.get(pet.id);
      if (pet !== null && (created === undefined || JSON.stringify(created) !== JSON.stringify(pet))) {
        problems.push(
          problem(
            built,
            response,
            `a pet listed or fetched that no 201 answered with this content\n    the 201 said ${JSON.stringify(created ?? null)}`,
          ),
        );
      }
    }
  }
  for (const { built, response } of answered) {
    const replay =
      response.status === 201 && response.headers.get('idempotent-replayed') === 'true'
        ? toPet(parseJson(response.body)?.value)
        : null;
    if (replay !== null && JSON.stringify(ledger.get(replay.id)) !== JSON.stringify(replay)) {
      problems.push(
        problem(
          built,
          response,
          `a replay (Idempotent-Replayed) of a pet that no 201 answered with this content\n    the 201 said ${JSON.stringify(ledger.get(replay.id) ?? null)}`,
        ),
      );
    }
    if (built.route === 'get' && response.status === 404 && built.petId !== undefined && before.includes(built.petId)) {
      problems.push(problem(built, response, `a pet answered 201 earlier, now 404\n    pet ${built.petId}`));
    }
  }
  if (SHRINK && problems.length > 0)
    throw new Error(`${problems.length} problem(s) in a batch of ${batch.length}:\n  ${problems.join('\n  ')}`);
  record(problems);
}

beforeAll(async () => {
  database = await openTestDatabase();
  server = await startServer(database);
}, 120_000);
afterAll(async () => {
  await server?.close();
  await database?.close();
});

describe('fuzzing the HTTP surface', () => {
  it('never answers 5xx or hangs, answers every error with the Error body, and stores exactly the pets it answered 201', async () => {
    const started = Date.now();
    try {
      await fc.assert(fc.asyncProperty(fc.array(plan, { minLength: 1, maxLength: 15, size: 'max' }), runBatch), {
        seed: SEED,
        numRuns: RUNS,
        plugins: [fc.interruptAfterTimeLimit(240_000, { failOnInterrupt: true })],
      });

      const rows: unknown = await database.dataSource.query(
        'SELECT id, name, category_id, status FROM pets ORDER BY id',
      );
      const stored = new Map<number, Pet>();
      for (const row of Array.isArray(rows) ? rows : []) {
        const pet = isRecord(row)
          ? toPet({ id: Number(row.id), name: row.name, categoryId: Number(row.category_id), status: row.status })
          : null;
        if (pet === null) record([`a row in pets that is not a Pet\n    ${JSON.stringify(row)}`]);
        else stored.set(pet.id, pet);
      }
      for (const pet of ledger.values()) {
        if (JSON.stringify(stored.get(pet.id)) !== JSON.stringify(pet))
          record([
            `a pet answered 201 that the table does not hold as answered\n    answered ${JSON.stringify(pet)}, table ${JSON.stringify(stored.get(pet.id) ?? null)}`,
          ]);
      }
      for (const pet of stored.values()) {
        if (!ledger.has(pet.id)) record([`a pet in the table that no 201 answered\n    ${JSON.stringify(pet)}`]);
      }
      if (!process.env.FUZZ_RUNS) expect(stats.requests).toBeGreaterThanOrEqual(10_000);
      const report = [...found].map(([kind, { count, got, example }]) => {
        const statuses = got.size === 0 ? '' : `, got ${[...got].map(([status, n]) => `${status} (${n}×)`).join(', ')}`;
        return `[${count}×] ${kind}${statuses}\n    e.g. ${example}`;
      });
      if (report.length > 0)
        throw new Error(`${report.length} kind(s) of problem (seed ${SEED}):\n\n${report.slice(0, 30).join('\n\n')}`);
    } finally {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const byStatus = [...stats.byStatus]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status}: ${count}`)
        .join(', ');
      const refused = [...stats.refusedBecause].map(([reason, count]) => `${count}× ${reason}`).join('; ');
      console.log(
        `fuzz: seed ${SEED}, ${RUNS} batches: ${stats.requests} requests answered in ${seconds} s (${byStatus}); ` +
          `${ledger.size} pets created; ${stats.unanswered} unanswered (hang or dropped connection); ${found.size} kinds of problem; ` +
          `${stats.refused} requests the client refused to send${refused ? ` (${refused})` : ''}`,
      );
    }
  }, 300_000);
});
