import { type HighWaterMark } from '../../src/domain/pets/pet-repository.js';
import { HighWaterMarks } from '../../src/application/pets/ports.js';
import type { InMemoryPetRepository } from './in-memory-pet-repository.js';

/** The in-memory store's marks: its creates settle as they are acknowledged. Counts fresh reads. */
export class InMemoryHighWaterMarks extends HighWaterMarks {
  freshReads = 0;
  private mark: HighWaterMark | null = null;

  constructor(private readonly pets: InMemoryPetRepository) {
    super();
  }

  last(): HighWaterMark | null {
    return this.mark;
  }

  fresh(): Promise<HighWaterMark> {
    this.freshReads++;
    this.mark = { upToId: this.pets.lastIdDrawn };
    return Promise.resolve(this.mark);
  }
}
