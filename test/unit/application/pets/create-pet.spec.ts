import { CreatePet } from '../../../../src/application/pets/create-pet.js';
import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../../../../src/application/pets/errors.js';
import { type PetTransaction } from '../../../../src/application/pets/ports.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import { InvalidPetError, type Pet } from '../../../../src/domain/pets/pet.js';
import type { PetRepository } from '../../../../src/domain/pets/pet-repository.js';
import { InMemoryPetRepository } from '../../../support/in-memory-pet-repository.js';
import { InMemoryPetTransactions } from '../../../support/in-memory-pet-transactions.js';

function createPetWith(
  pets = new InMemoryPetRepository(),
  transactions: InMemoryPetTransactions = new InMemoryPetTransactions(pets),
) {
  return { pets, createPet: new CreatePet(pets, transactions) };
}

/** Transactions whose first COMMIT fails after the work is done, as when the connection drops then. */
class CommitFailsOnce extends InMemoryPetTransactions {
  private failures = 1;

  override run<T>(work: (transaction: PetTransaction) => Promise<T>): Promise<T> {
    return super.run(async (transaction) => {
      const result = await work(transaction);
      if (this.failures-- > 0) throw new StoreUnavailableError();
      return result;
    });
  }
}

const retry = { caller: 'caller-a', key: 'key-1' };

describe('CreatePet', () => {
  it('gives a new pet the status "available" when none is sent', async () => {
    const { pets, createPet } = createPetWith();

    const { pet, replayed } = await createPet.execute({ name: 'Rex', categoryId: 1 });

    expect(pet).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
    expect(replayed).toBe(false);
    expect(await pets.findById(pet.id)).toEqual(pet);
  });

  it('without a retry key, creates a new pet every time, even for the same request', async () => {
    const { pets, createPet } = createPetWith();

    const first = await createPet.execute({ name: 'Rex', categoryId: 1 });
    const second = await createPet.execute({ name: 'Rex', categoryId: 1 });

    expect(second).toEqual({ pet: { ...first.pet, id: 2 }, replayed: false });
    expect(await pets.list({ limit: 10 })).toHaveLength(2);
  });

  it('stores nothing when the pet is invalid, with or without a retry key', async () => {
    const { pets, createPet } = createPetWith();

    await expect(createPet.execute({ name: ' ', categoryId: 1 })).rejects.toBeInstanceOf(InvalidPetError);
    await expect(createPet.execute({ name: 'Rex', categoryId: 0 }, retry)).rejects.toBeInstanceOf(InvalidPetError);

    expect(await pets.list({ limit: 10 })).toEqual([]);
  });

  it('answers a retry with the same key and request with the pet the first one created, and creates nothing', async () => {
    const { pets, createPet } = createPetWith();
    const first = await createPet.execute({ name: 'Rex', categoryId: 1 }, retry);

    const again = await createPet.execute({ name: 'Rex', categoryId: 1 }, retry);

    expect(again).toEqual({ pet: first.pet, replayed: true });
    expect(await pets.list({ limit: 10 })).toHaveLength(1);
  });

  it('refuses the same key with another request, and a status sent is not the same as one omitted', async () => {
    const { createPet } = createPetWith();
    await createPet.execute({ name: 'Rex', categoryId: 1 }, retry);

    await expect(createPet.execute({ name: 'Max', categoryId: 1 }, retry)).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    await expect(createPet.execute({ name: 'Rex', categoryId: 1, status: 'available' }, retry)).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
  });

  it('keeps keys of different callers apart', async () => {
    const { pets, createPet } = createPetWith();
    await createPet.execute({ name: 'Rex', categoryId: 1 }, retry);

    const other = await createPet.execute({ name: 'Max', categoryId: 2 }, { ...retry, caller: 'caller-b' });

    expect(other.replayed).toBe(false);
    expect(await pets.list({ limit: 10 })).toHaveLength(2);
  });

  it('refuses a second request while the first with the same key is in flight', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    class SlowPets extends InMemoryPetRepository {
      override async add(pet: Parameters<PetRepository['add']>[0]): Promise<Pet> {
        await gate;
        return super.add(pet);
      }
    }
    const { createPet } = createPetWith(new SlowPets());

    const first = createPet.execute({ name: 'Rex', categoryId: 1 }, retry);
    await expect(createPet.execute({ name: 'Rex', categoryId: 1 }, retry)).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    release();

    expect((await first).replayed).toBe(false);
  });

  it('keeps neither the pet nor its record when the transaction fails, and leaves the key free for a retry', async () => {
    const pets = new InMemoryPetRepository();
    const { createPet } = createPetWith(pets, new CommitFailsOnce(pets));

    await expect(createPet.execute({ name: 'Rex', categoryId: 1 }, retry)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(await pets.list({ limit: 10 })).toEqual([]);

    const again = await createPet.execute({ name: 'Rex', categoryId: 1 }, retry);
    expect(again.replayed).toBe(false);
    expect(await pets.list({ limit: 10 })).toEqual([again.pet]);
  });
});
