import { PetRepository, type PetListQuery } from '../domain/pet-repository.js';
import type { NewPet, Pet } from '../domain/pet.js';
import type { ReplicaSet } from '../platform/database/replica-set.js';
import { StoreUnavailableError } from '../platform/database/store-errors.js';

/**
 * Reads from a replica when one is usable, everything else from the primary. A replica that
 * fails or is slower than the deadline costs the read that deadline, then the read goes to the
 * primary. Read-your-writes: a pet a replica does not have (it may not have replayed the create
 * yet) is looked for on the primary before the answer is 404. A list under a settled mark goes
 * only to a replica that has replayed past the mark's position, so that it lacks no settled pet.
 */
export class ReplicaRoutingPetRepository extends PetRepository {
  constructor(
    private readonly primary: PetRepository,
    private readonly replicas: ReplicaSet<PetRepository>,
  ) {
    super();
  }

  add(pet: NewPet): Promise<Pet> {
    return this.primary.add(pet);
  }

  async findById(id: number): Promise<Pet | null> {
    const found = await this.fromReplica((pets) => pets.findById(id));
    return found ?? this.primary.findById(id);
  }

  async list(query: PetListQuery): Promise<Pet[]> {
    return (await this.fromReplica((pets) => pets.list(query), query.settled?.position)) ?? this.primary.list(query);
  }

  /** The replica's answer, or null when there is none to ask or it failed (it is then taken out). */
  private async fromReplica<T>(read: (pets: PetRepository) => Promise<T>, replayedPast?: string): Promise<T | null> {
    const replica = this.replicas.pick(replayedPast);
    if (replica === null) return null;
    try {
      return await this.replicas.withinDeadline(read(replica.reads));
    } catch (error) {
      const reason =
        error instanceof StoreUnavailableError
          ? 'a read found it unavailable'
          : `a read failed: ${error instanceof Error ? error.message : String(error)}`;
      this.replicas.takeOut(replica.name, reason);
      return null;
    }
  }
}
