import { applyDecorators, type INestApplication } from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiParam,
  ApiResponse,
  DocumentBuilder,
  getSchemaPath,
  type OpenAPIObject,
  SwaggerModule,
} from '@nestjs/swagger';
import { ERROR_CODES, type ErrorStatus, ErrorResponse } from '../platform/api-error.js';
import { GET_PET_DEPRECATION, GET_PET_SUNSET } from './deprecation.js';
import { JSON_BODY_LIMIT } from '../platform/json-body.guard.js';
import { NewPetRequest, PetResponse } from './pet.dto.js';

type HeaderObject = { description: string; required: boolean; schema: { type: 'string' } };

/** A response header; `required` ones are checked on every e2e response (test/support/contract.ts). */
const header = (description: string, required = true): HeaderObject => ({
  description,
  required,
  schema: { type: 'string' },
});

const rateLimit = header(
  'IETF draft "RateLimit header fields for HTTP": where the counter stands, as `"<policy>";r=<requests remaining>;t=<seconds until the window resets>`. On a 429 the first item names the policy that refused the request.',
);
const rateLimitPolicy = header(
  'IETF draft "RateLimit header fields for HTTP": the limit, as `"<policy>";q=<requests>;w=<window in seconds>`. The policies are `"per-key"` (requests per API key) and `"failed-auth"` (wrong keys per client address).',
);

/**
 * Every answer to a request with a key carries the RateLimit fields while rate limiting is on
 * (RATE_LIMIT): of `"per-key"` once the key is accepted, of `"failed-auth"` on a 401 for a wrong
 * key. A 429 always carries them. Node's own 431 comes before any key is read.
 */
const rateLimitHeaders = (required: boolean): Record<string, HeaderObject> => ({
  RateLimit: { ...rateLimit, required },
  'RateLimit-Policy': { ...rateLimitPolicy, required },
});

/** An Error response, with an example body of its own status (not the schema's generic one). */
const error = (status: ErrorStatus, description: string, headers: Record<string, HeaderObject> = {}) =>
  ApiResponse({
    status,
    description,
    type: ErrorResponse,
    headers: { ...headers, ...rateLimitHeaders(status === 429) },
    example: { code: ERROR_CODES[status], message: description, status },
  });

// The answers every operation shares; `headers` are the operation's own (getPet's deprecation).
const unauthorized = (headers: Record<string, HeaderObject> = {}) =>
  error(401, 'Missing or invalid API key.', {
    ...headers,
    'WWW-Authenticate': header(
      '`Bearer realm="petstore"`, with `error="invalid_token"` when a key was presented but is wrong (RFC 6750).',
    ),
  });
const unavailable = (headers: Record<string, HeaderObject> = {}) =>
  error(503, 'The database does not answer; retry after the given delay.', {
    ...headers,
    'Retry-After': header('Seconds to wait before retrying.'),
  });
const internal = (headers: Record<string, HeaderObject> = {}) =>
  error(500, 'Unexpected failure; the body reveals nothing of it.', headers);
/** Node's HTTP parser answers this before any route, for any path. */
const headersTooLarge = ApiResponse({
  status: 431,
  description: 'The request header section exceeds 16 KiB.',
  type: ErrorResponse,
  example: { code: 'invalid_request', message: 'Request header section exceeds 16 KiB', status: 431 },
});
const rateLimited = (headers: Record<string, HeaderObject> = {}) =>
  error(
    429,
    'Too many requests for this API key (policy `"per-key"`), or too many wrong keys from this address (policy `"failed-auth"`).',
    { ...headers, 'Retry-After': header('Seconds to wait before retrying.') },
  );

export const ListPetsDocs = () =>
  applyDecorators(
    ApiOperation({
      operationId: 'listPets',
      summary: 'List all animals',
      description: [
        'Returns a page of animals in ascending `id` order, optionally filtered by status. When more animals follow, the `Link` header carries the URL of the next page (`rel="next"`), with an opaque `cursor`.',
        'Beyond what the parameter schemas say: each parameter may be given at most once (twice is a 400); a `cursor` is accepted only if this service issued it, for the same `status`; unknown parameters are ignored.',
      ].join(' '),
    }),
    ApiResponse({
      status: 200,
      description: 'A page of animals.',
      schema: { $ref: getSchemaPath('Pets') },
      headers: {
        Link: header(
          '`</v1/pets?limit=..&cursor=..>; rel="next"` (RFC 8288) when more animals follow; absent on the last page.',
          false,
        ),
        ...rateLimitHeaders(false),
      },
    }),
    error(400, 'Invalid `limit`, `status` or `cursor`, or one of them given twice, or a malformed HTTP request.'),
    unauthorized(),
    rateLimited(),
    headersTooLarge,
    internal(),
    unavailable(),
  );

export const CreatePetDocs = () =>
  applyDecorators(
    ApiOperation({
      operationId: 'createPet',
      summary: 'Add an animal',
      description: [
        'Adds an animal; its status is `available` when omitted.',
        `Beyond what the NewPet schema says: the body must be \`application/json\` (a \`charset=utf-8\` parameter is fine, any other media type or charset is a 415), valid UTF-8, with no \`Content-Encoding\` but \`gzip\`, \`deflate\`, \`br\` or \`identity\` (else 415), at most ${JSON_BODY_LIMIT / 1024} KiB (else 413), and one JSON object (else 400).`,
        'The body is checked before the `Idempotency-Key`: an invalid body is a 400 whatever the key, and leaves the key unused. The same key with a different body within 24 hours is a 422; while the first request with that key is still in flight, a second is a 409.',
      ].join(' '),
    }),
    ApiBody({ type: NewPetRequest, required: true }),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'Makes the create safe to retry (IETF draft "The Idempotency-Key HTTP Header Field"). A retry with the same key and the same body from the same API key within 24 hours returns the original response and creates nothing.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' },
    }),
    ApiResponse({
      status: 201,
      description:
        'Animal added; the body carries the assigned `id`. Also the replayed answer to a retry with the same Idempotency-Key.',
      type: PetResponse,
      headers: {
        Location: header('`/v1/pets/{id}` of the new animal.'),
        'Idempotent-Replayed': header(
          '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.',
          false,
        ),
        ...rateLimitHeaders(false),
      },
    }),
    error(
      400,
      'Malformed HTTP request, invalid Idempotency-Key header, or body missing, not a JSON object, malformed, with missing required fields, invalid values or unknown fields; the message names every offending field.',
    ),
    unauthorized(),
    error(409, 'A request with the same Idempotency-Key is still in flight; retry after the given delay.', {
      'Retry-After': header('Seconds to wait before retrying.'),
    }),
    error(413, `Body larger than ${JSON_BODY_LIMIT / 1024} KiB.`),
    error(415, 'Body is not `application/json`.'),
    error(422, 'The Idempotency-Key was already used with a different body.'),
    rateLimited(),
    headersTooLarge,
    internal(),
    unavailable(),
  );

const optional = (headers: Record<string, HeaderObject>): Record<string, HeaderObject> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, { ...value, required: false }]));

const deprecationHeaders = {
  Sunset: header(`\`${GET_PET_SUNSET}\`: the operation is removed then (RFC 8594).`),
  Deprecation: header(`\`${GET_PET_DEPRECATION}\`: deprecated since that time (RFC 9745).`),
};

export const GetPetDocs = () =>
  applyDecorators(
    ApiOperation({
      operationId: 'getPet',
      summary: 'Get an animal (deprecated)',
      description:
        'Deprecated: scheduled for removal on 5 December 2030. Use `GET /pets` with the `status` filter instead. Every response carries `Sunset` and `Deprecation` headers.',
      deprecated: true,
    }),
    ApiParam({
      name: 'petId',
      description: 'Identifier of the animal to fetch.',
      schema: { type: 'integer', format: 'int64', minimum: 1 },
    }),
    ApiResponse({
      status: 200,
      description: 'Animal found.',
      type: PetResponse,
      headers: { ...deprecationHeaders, ...rateLimitHeaders(false) },
    }),
    unauthorized(deprecationHeaders),
    // A request Node's parser refuses (bytes not allowed in the path) gets its 400 before the route: no Sunset then.
    error(
      400,
      'The path is not valid percent-encoded UTF-8, or the request is malformed.',
      optional(deprecationHeaders),
    ),
    error(404, 'No animal has this id (also for ids that are not positive int64 integers).', deprecationHeaders),
    rateLimited(deprecationHeaders),
    headersTooLarge,
    internal(deprecationHeaders),
    unavailable(deprecationHeaders),
    ApiExtraModels(PetResponse),
  );

/** The servers of the committed snapshot (docs/openapi.json): config.ts's defaults. */
export const SNAPSHOT_SERVERS = { production: '/v1', staging: '/v1' };

export function buildOpenApiDocument(
  app: INestApplication,
  servers: { production: string; staging: string },
): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Pet Store')
    .setDescription(
      'A store of animals available for adoption. Every operation needs `Authorization: Bearer <API key>`.',
    )
    .setVersion('1.0.0')
    .addTag('pets', 'Animals available for adoption.')
    .addServer(servers.production, 'Production')
    .addServer(servers.staging, 'Staging')
    // Not addBearerAuth(): it adds `bearerFormat: JWT`, and the keys are not JWTs.
    .addSecurity('bearerAuth', {
      type: 'http',
      scheme: 'bearer',
      description:
        'An API key, sent as `Authorization: Bearer <key>` (the scheme name in any case). Keys are opaque strings, not JWTs: the ones the service issues are `psk_` followed by 43 base64url characters (256 random bits); an operator may also configure other keys (`API_KEYS`), of visible ASCII characters other than commas. Without a valid key every operation answers 401.',
    })
    .build();
  // Paths are relative to the servers, which end in /v1.
  const document = SwaggerModule.createDocument(app, config, {
    ignoreGlobalPrefix: true,
    extraModels: [PetResponse, ErrorResponse],
  });
  document.components ??= {};
  document.components.schemas ??= {};
  document.components.schemas.Pets = {
    type: 'array',
    description: 'A page of animals.',
    items: { $ref: getSchemaPath('Pet') },
  };
  closeRequestBodies(document);
  return document;
}

/**
 * BodyValidationPipe refuses a property a body's DTO does not define (forbidNonWhitelisted), so
 * every request-body schema says `additionalProperties: false`; @ApiSchema has no option for it.
 */
function closeRequestBodies(document: OpenAPIObject): void {
  const schemas = document.components?.schemas ?? {};
  for (const path of Object.values(document.paths)) {
    for (const operation of [path.get, path.put, path.post, path.patch, path.delete]) {
      const body = operation?.requestBody;
      const ref = body !== undefined && 'content' in body ? body.content['application/json']?.schema : undefined;
      const schema =
        ref !== undefined && '$ref' in ref ? schemas[ref.$ref.replace('#/components/schemas/', '')] : undefined;
      if (schema !== undefined && !('$ref' in schema)) schema.additionalProperties = false;
    }
  }
}

const documents = new WeakMap<INestApplication, OpenAPIObject>();

/** The document an app serves (for the snapshot script). */
export function openApiDocumentOf(app: INestApplication): OpenAPIObject {
  const document = documents.get(app);
  if (document === undefined) throw new Error('serveOpenApi() was not called for this app');
  return document;
}

/** /openapi.json, /openapi.yaml and Swagger UI at /docs; outside /v1 and needing no key. */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  documents.set(app, document);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Pet Store API',
    swaggerOptions: { persistAuthorization: false },
  });
}
