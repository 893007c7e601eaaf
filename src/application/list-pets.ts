import type { Pet } from '../domain/pet.js';
import type { PetRepository } from '../domain/pet-repository.js';
import type { PetStatus } from '../domain/pet-status.js';

/** Bounds of one page, from the spec. */
export const PAGE_LIMIT = { min: 1, max: 100, default: 20 } as const;

export type ListPetsInput = { status?: PetStatus; limit: number; afterId?: number };

/** `nextAfterId` is set only when more pets follow this page. */
export type PetPage = { pets: Pet[]; nextAfterId?: number };

export class ListPets {
  constructor(private readonly pets: PetRepository) {}

  async execute({ status, limit, afterId }: ListPetsInput): Promise<PetPage> {
    // One extra row tells whether another page exists without a COUNT.
    const rows = await this.pets.list({ status, afterId, limit: limit + 1 });
    const pets = rows.slice(0, limit);
    const last = pets.at(-1);
    return rows.length > limit && last ? { pets, nextAfterId: last.id } : { pets };
  }
}
