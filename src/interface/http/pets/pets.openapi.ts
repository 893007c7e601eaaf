import { applyDecorators } from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiParam,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import {
  error,
  header,
  type HeaderObject,
  headersTooLarge,
  internal,
  rateLimited,
  rateLimitHeaders,
  unauthorized,
  unavailable,
} from '../platform/openapi-responses.js';
import { GET_PET_DEPRECATION, GET_PET_SUNSET } from './deprecation.js';
import { API_PREFIX } from '../platform/api-prefix.js';
import { JSON_BODY_LIMIT } from '../platform/json-body.guard.js';
import { NewPetRequest, PetResponse } from './pet.dto.js';

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
          `\`<${API_PREFIX}/pets?limit=..&cursor=..>; rel="next"\` (RFC 8288) when more animals follow; absent on the last page.`,
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
        Location: header(`\`${API_PREFIX}/pets/{id}\` of the new animal.`),
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
