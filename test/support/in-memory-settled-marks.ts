import { type SettledMark } from '../../src/domain/pets/pet-repository.js';
import { SettledMarks } from '../../src/application/pets/ports.js';
import type { InMemoryPetRepository } from './in-memory-pet-repository.js';

/** The in-memory store's marks: its creates settle as they are acknowledged. Counts fresh reads. */
export class InMemorySettledMarks extends SettledMarks {
  freshReads = 0;
  private mark: SettledMark | null = null;

  constructor(private readonly pets: InMemoryPetRepository) {
    super();
  }

  last(): SettledMark | null {
    return this.mark;
  }

  fresh(): Promise<SettledMark> {
    this.freshReads++;
    this.mark = { upToId: this.pets.lastIdDrawn };
    return Promise.resolve(this.mark);
  }
}
