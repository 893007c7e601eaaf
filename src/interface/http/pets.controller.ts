import { All, Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiExcludeEndpoint, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CreatePet } from '../../application/create-pet.js';
import { GetPet } from '../../application/get-pet.js';
import { ListPets, PAGE_LIMIT } from '../../application/list-pets.js';
import { MAX_PET_ID } from '../../domain/pet.js';
import { ApiError } from './api-error.js';
import { CursorCodec } from './cursor.js';
import { IdempotentResponses } from './idempotent-responses.js';
import { JsonBodyGuard } from './json-body.guard.js';
import { CreatePetDocs, GetPetDocs, ListPetsDocs } from './openapi.js';
import { ListPetsQuery, NewPetRequest, parseListPetsQuery, type PetResponse, toPetResponse } from './pet.dto.js';
import { bodyValidation } from './validation.js';

@ApiTags('pets')
@ApiBearerAuth('bearerAuth')
@Controller('pets')
export class PetsController {
  constructor(
    private readonly listPets: ListPets,
    private readonly createPet: CreatePet,
    private readonly getPet: GetPet,
    private readonly cursors: CursorCodec,
    private readonly idempotency: IdempotentResponses,
  ) {}

  @Get()
  @ListPetsDocs()
  async list(@Query(parseListPetsQuery) query: ListPetsQuery, @Res({ passthrough: true }) response: Response): Promise<PetResponse[]> {
    const limit = query.limit === undefined ? PAGE_LIMIT.default : Number(query.limit);
    const afterId = query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, query.status);
    const page = await this.listPets.execute({ status: query.status, limit, afterId });
    if (page.nextAfterId !== undefined) {
      const next = new URLSearchParams({ limit: String(limit), ...(query.status ? { status: query.status } : {}) });
      next.set('cursor', this.cursors.encode({ afterId: page.nextAfterId, status: query.status }));
      // RFC 8288; a path-absolute reference, resolved against the request URL by the client.
      response.setHeader('Link', `</v1/pets?${next}>; rel="next"`);
    }
    return page.pets.map(toPetResponse);
  }

  /** The body is read by JsonBodyGuard (after the bearer-key guard) and checked by bodyValidation before this runs. */
  @Post()
  @HttpCode(201)
  @UseGuards(JsonBodyGuard)
  @CreatePetDocs()
  async create(@Body(bodyValidation) body: NewPetRequest, @Req() request: Request, @Res({ passthrough: true }) response: Response): Promise<PetResponse> {
    return this.idempotency.once(request, response, 201, async (pets) => {
      const pet = await this.createPet.execute({ name: body.name, categoryId: body.categoryId, status: body.status }, pets);
      response.location(`/v1/pets/${pet.id}`);
      return toPetResponse(pet);
    });
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
    throw new ApiError(405, 'Method not allowed on /v1/pets: use GET or POST', { Allow: 'GET, POST' });
  }

  @All(':petId')
  @ApiExcludeEndpoint()
  itemMethodNotAllowed(): never {
    throw new ApiError(405, 'Method not allowed on /v1/pets/{petId}: use GET', { Allow: 'GET' });
  }
}

/** An id that is not a positive int64 a JSON number can carry cannot belong to any pet: 404, not 400. */
function parsePetId(petId: string): number {
  const id = /^\d{1,16}$/.test(petId) ? Number(petId) : 0;
  if (id < 1 || id > MAX_PET_ID) throw new ApiError(404, `Pet ${petId.slice(0, 40)} does not exist`);
  return id;
}
