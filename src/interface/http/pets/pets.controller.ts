import {
  All,
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { ApiBearerAuth, ApiExcludeEndpoint, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CreatePet } from '../../../application/pets/create-pet.js';
import type { RetryKey } from '../../../application/pets/ports.js';
import { GetPet } from '../../../application/pets/get-pet.js';
import { ListPets, PAGE_LIMIT } from '../../../application/pets/list-pets.js';
import { MAX_PET_ID } from '../../../domain/pets/pet.js';
import { ApiError } from '../platform/api-error.js';
import { Caller } from '../platform/caller.decorator.js';
import { CursorCodec } from './cursor.js';
import { JsonBodyGuard } from '../platform/json-body.guard.js';
import { CreatePetDocs, GetPetDocs, ListPetsDocs } from './pets.openapi.js';
import { ListPetsQueryPipe } from './list-pets-query.pipe.js';
import { PetErrorsFilter } from './pet-errors.filter.js';
import { ListPetsQuery, NewPetRequest, type PetResponse, toPetResponse } from './pet.dto.js';
import { API_PREFIX } from '../platform/api-prefix.js';

// Stryker disable all: the routes, tested end to end (test/e2e/pets.e2e-spec.ts), not by the unit project
@ApiTags('pets')
@ApiBearerAuth('bearerAuth')
@Controller('pets')
@UseFilters(PetErrorsFilter)
export class PetsController {
  constructor(
    private readonly listPets: ListPets,
    private readonly createPet: CreatePet,
    private readonly getPet: GetPet,
    private readonly cursors: CursorCodec,
  ) {}

  @Get()
  @ListPetsDocs()
  async list(
    @Query(ListPetsQueryPipe) query: ListPetsQuery,
    @Res({ passthrough: true }) response: Response,
  ): Promise<PetResponse[]> {
    const limit = query.limit === undefined ? PAGE_LIMIT.default : Number(query.limit);
    const afterId = query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, query.status);
    const page = await this.listPets.execute({ status: query.status, limit, afterId });
    if (page.nextAfterId !== undefined) {
      const next = new URLSearchParams({ limit: String(limit), ...(query.status ? { status: query.status } : {}) });
      next.set('cursor', this.cursors.encode({ afterId: page.nextAfterId, status: query.status }));
      // RFC 8288; a path-absolute reference, resolved against the request URL by the client.
      response.setHeader('Link', `<${API_PREFIX}/pets?${next.toString()}>; rel="next"`);
    }
    return page.pets.map(toPetResponse);
  }

  /** The body is read by JsonBodyGuard, after authentication: a caller without a key gets 401 whatever it sent. */
  @Post()
  @HttpCode(201)
  @UseGuards(JsonBodyGuard)
  @CreatePetDocs()
  async create(
    @Body() body: NewPetRequest,
    @Headers('idempotency-key') idempotencyKey: string | string[] | undefined,
    @Caller() caller: string,
    @Res({ passthrough: true }) response: Response,
  ): Promise<PetResponse> {
    const retry = retryKeyOf(idempotencyKey, caller);
    const { pet, replayed } = await this.createPet.execute(
      { name: body.name, categoryId: body.categoryId, status: body.status },
      retry,
    );
    response.location(`${API_PREFIX}/pets/${pet.id}`);
    if (replayed) response.setHeader('Idempotent-Replayed', 'true');
    return toPetResponse(pet);
  }

  /** Deprecated; Sunset and Deprecation headers are set by announceGetPetDeprecation (see app.ts). */
  @Get(':petId')
  @GetPetDocs()
  async get(@Param('petId') petId: string): Promise<PetResponse> {
    return toPetResponse(await this.getPet.execute(parsePetId(petId)));
  }

  @All()
  @ApiExcludeEndpoint()
  collectionMethodNotAllowed(): never {
    throw new ApiError(405, `Method not allowed on ${API_PREFIX}/pets: use GET or POST`, { Allow: 'GET, POST' });
  }

  @All(':petId')
  @ApiExcludeEndpoint()
  itemMethodNotAllowed(): never {
    throw new ApiError(405, `Method not allowed on ${API_PREFIX}/pets/{petId}: use GET`, { Allow: 'GET' });
  }
}

const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;

/** Idempotency-Key (IETF draft "The Idempotency-Key HTTP Header Field"), scoped to the API key that sent it. */
function retryKeyOf(header: string | string[] | undefined, caller: string): RetryKey | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !VISIBLE_ASCII.test(header)) {
    throw new ApiError(400, 'Idempotency-Key header must be 1 to 255 visible ASCII characters, sent once');
  }
  return { caller, key: header };
}

/** An id that is not a positive int64 a JSON number can carry cannot belong to any pet: 404, not 400. */
function parsePetId(petId: string): number {
  const id = /^\d{1,16}$/.test(petId) ? Number(petId) : 0;
  if (id < 1 || id > MAX_PET_ID) throw new ApiError(404, `Pet ${petId.slice(0, 40)} does not exist`);
  return id;
}
// Stryker restore all
