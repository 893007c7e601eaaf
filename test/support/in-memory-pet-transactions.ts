import { IdempotencyConflictError } from '../../src/application/pets/errors.js';
import {
  IdempotencyKeys,
  type IdempotencyRecord,
  type PetTransaction,
  PetTransactions,
  type RetryKey,
} from '../../src/application/pets/ports.js';
import type { NewPet, Pet } from '../../src/domain/pets/pet.js';
import { PetRepository, type PetListQuery } from '../../src/domain/pets/pet-repository.js';
import type { InMemoryPetRepository } from './in-memory-pet-repository.js';

/**
 * An honest fake: what a transaction writes is kept when its work resolves and undone when it
 * throws; a key claimed by one transaction is refused to any other until that one ends. Unlike
 * PostgreSQL, the pets a transaction adds are visible to others before it ends. Records never expire here.
 */
export class InMemoryPetTransactions extends PetTransactions {
  private readonly records = new Map<string, IdempotencyRecord>();
  private readonly claimed = new Set<string>();

  constructor(private readonly pets: InMemoryPetRepository) {
    super();
  }

  async run<T>(work: (transaction: PetTransaction) => Promise<T>): Promise<T> {
    const pets = new PetsInTransaction(this.pets);
    const keys = new KeysInTransaction(this.records, this.claimed);
    try {
      const result = await work({ pets, keys });
      keys.commit();
      return result;
    } catch (error) {
      pets.rollback();
      throw error;
    } finally {
      keys.release();
    }
  }
}

class PetsInTransaction extends PetRepository {
  private readonly added: number[] = [];

  constructor(private readonly pets: InMemoryPetRepository) {
    super();
  }

  async add(pet: NewPet): Promise<Pet> {
    const stored = await this.pets.add(pet);
    this.added.push(stored.id);
    return stored;
  }

  findById(id: number): Promise<Pet | null> {
    return this.pets.findById(id);
  }

  list(query: PetListQuery): Promise<Pet[]> {
    return this.pets.list(query);
  }

  rollback(): void {
    for (const id of this.added) this.pets.forget(id);
  }
}

class KeysInTransaction extends IdempotencyKeys {
  private readonly mine = new Set<string>();
  private readonly pending = new Map<string, IdempotencyRecord>();

  constructor(
    private readonly records: Map<string, IdempotencyRecord>,
    private readonly claimed: Set<string>,
  ) {
    super();
  }

  claim(key: RetryKey): Promise<void> {
    const id = idOf(key);
    if (this.claimed.has(id) && !this.mine.has(id)) return Promise.reject(new IdempotencyConflictError());
    this.claimed.add(id);
    this.mine.add(id);
    return Promise.resolve();
  }

  find(key: RetryKey): Promise<IdempotencyRecord | null> {
    const id = idOf(key);
    return Promise.resolve(this.pending.get(id) ?? this.records.get(id) ?? null);
  }

  remember(key: RetryKey, record: IdempotencyRecord): Promise<void> {
    this.pending.set(idOf(key), { ...record });
    return Promise.resolve();
  }

  commit(): void {
    for (const [id, record] of this.pending) this.records.set(id, record);
  }

  release(): void {
    for (const id of this.mine) this.claimed.delete(id);
  }
}

function idOf({ caller, key }: RetryKey): string {
  return JSON.stringify([caller, key]);
}
