import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { Pet } from './pet.entity.js';
import { CreatePetDto, ListPetsQuery } from './pet.dto.js';

@Injectable()
export class PetsService {
  constructor(@InjectRepository(Pet) private readonly pets: Repository<Pet>) {}

  findAll({ limit, status }: ListPetsQuery): Promise<Pet[]> {
    return this.pets.find({ where: status ? { status } : {}, order: { id: 'ASC' }, take: limit });
  }

  async findOne(id: number): Promise<Pet> {
    const pet = await this.pets.findOneBy({ id });
    if (!pet) throw new NotFoundException(`Pet ${id} does not exist`);
    return pet;
  }

  create(dto: CreatePetDto): Promise<Pet> {
    return this.pets.save(this.pets.create(dto));
  }
}
