import { Body, Controller, Get, Param, ParseIntPipe, Post, Query } from '@nestjs/common';
import { Pet } from './pet.entity.js';
import { CreatePetDto, ListPetsQuery } from './pet.dto.js';
import { PetsService } from './pets.service.js';

@Controller('v1/pets')
export class PetsController {
  constructor(private readonly petsService: PetsService) {}

  @Get()
  findAll(@Query() query: ListPetsQuery): Promise<Pet[]> {
    return this.petsService.findAll(query);
  }

  @Get(':id')
  findOne(@Param('id', ParseIntPipe) id: number): Promise<Pet> {
    return this.petsService.findOne(id);
  }

  @Post()
  create(@Body() dto: CreatePetDto): Promise<Pet> {
    return this.petsService.create(dto);
  }
}
