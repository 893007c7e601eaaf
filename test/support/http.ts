export type PetBody = { id: number; name: string; categoryId: number; status: string };

function isPetBody(value: unknown): value is PetBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    'id' in value &&
    typeof value.id === 'number' &&
    'name' in value &&
    typeof value.name === 'string' &&
    'categoryId' in value &&
    typeof value.categoryId === 'number' &&
    'status' in value &&
    typeof value.status === 'string'
  );
}

/** The body as a Pet; fails the test when it is not one. */
export async function readPet(response: Response): Promise<PetBody> {
  const body: unknown = await response.json();
  if (!isPetBody(body)) throw new Error(`expected a Pet, got ${JSON.stringify(body)}`);
  return body;
}

/** The body as an array of Pets; fails the test when it is not one. */
export async function readPets(response: Response): Promise<PetBody[]> {
  const body: unknown = await response.json();
  if (!Array.isArray(body) || !body.every(isPetBody)) throw new Error(`expected Pets, got ${JSON.stringify(body)}`);
  return body;
}
