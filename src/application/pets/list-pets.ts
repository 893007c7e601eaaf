import type { Pet, PetStatus } from '../../domain/pets/pet.js';
import type { PetRepository, SettledMark } from '../../domain/pets/pet-repository.js';
import type { SettledMarks } from './ports.js';

/** Bounds of one page, from the spec. */
export const PAGE_LIMIT = { min: 1, max: 100, default: 20 } as const;

export type ListPetsInput = { status?: PetStatus; limit: number; afterId?: number };

/** `nextAfterId` is set only when more pets follow this page. */
export type PetPage = { pets: Pet[]; nextAfterId?: number };

export class ListPets {
  constructor(
    private readonly pets: PetRepository,
    private readonly settled: SettledMarks,
  ) {}

  /**
   * A page holds only settled pets, so a client that pages on never passes a pet still to come.
   * A full page below the last mark is final as it is; a short page may end only because the mark
   * is old, so it is read again under a fresh mark (which also shows the caller its own creates).
   * Never served as final under the old mark: without a fresh one, the page fails with its error.
   */
  async execute({ status, limit, afterId }: ListPetsInput): Promise<PetPage> {
    // One extra row tells whether another page exists without a COUNT.
    const query = { status, afterId, limit: limit + 1 };
    const last = this.settled.last();
    let rows = last === null ? null : await this.pets.list({ ...query, settled: last });
    if (rows === null || rows.length <= limit) {
      const fresh = await this.settled.fresh();
      // The same mark: no id was drawn since, so the rows already read are all there are.
      if (rows === null || !sameMark(fresh, last)) rows = await this.pets.list({ ...query, settled: fresh });
    }
    const pets = rows.slice(0, limit);
    const lastPet = pets.at(-1);
    return rows.length > limit && lastPet ? { pets, nextAfterId: lastPet.id } : { pets };
  }
}

function sameMark(a: SettledMark, b: SettledMark | null): boolean {
  return b !== null && a.upToId === b.upToId;
}
