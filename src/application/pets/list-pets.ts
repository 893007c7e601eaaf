import type { Pet, PetStatus } from '../../domain/pets/pet.js';
import { type HighWaterMark, type PetRepository, StaleMarkError } from '../../domain/pets/pet-repository.js';
import type { HighWaterMarks } from './ports.js';

/** Bounds of one page, from the spec. */
export const PAGE_LIMIT = { min: 1, max: 100, default: 20 } as const;

export type ListPetsInput = { status?: PetStatus; limit: number; afterId?: number };

/** `nextAfterId` is set only when more pets follow this page. */
export type PetPage = { pets: Pet[]; nextAfterId?: number };

export class ListPets {
  constructor(
    private readonly pets: PetRepository,
    private readonly marks: HighWaterMarks,
  ) {}

  /**
   * A page holds only pets at or below a high-water mark, so a client that pages on never passes
   * a pet still to come. A full page below the last mark is final as it is; a short page may end
   * only because the mark is old, so it is read again under a fresh mark (which also shows the
   * caller its own creates). Never served as final under the old mark: without a fresh one, the
   * page fails with its error. A last mark the store no longer vouches for (a failover or a restore
   * since) is not used at all.
   */
  async execute({ status, limit, afterId }: ListPetsInput): Promise<PetPage> {
    // One extra row tells whether another page exists without a COUNT.
    const query = { status, afterId, limit: limit + 1 };
    const last = this.marks.last();
    let rows = last === null ? null : await this.underLastMark({ ...query, upTo: last });
    if (rows === null || rows.length <= limit) {
      const fresh = await this.marks.fresh();
      // The same mark: no id was drawn since, so the rows already read are all there are.
      if (rows === null || !sameMark(fresh, last)) rows = await this.pets.list({ ...query, upTo: fresh });
    }
    const pets = rows.slice(0, limit);
    const lastPet = pets.at(-1);
    return rows.length > limit && lastPet ? { pets, nextAfterId: lastPet.id } : { pets };
  }

  private async underLastMark(query: Parameters<PetRepository['list']>[0]): Promise<Pet[] | null> {
    try {
      return await this.pets.list(query);
    } catch (error) {
      if (error instanceof StaleMarkError) return null;
      throw error;
    }
  }
}

function sameMark(a: HighWaterMark, b: HighWaterMark | null): boolean {
  return b !== null && a.upToId === b.upToId;
}
