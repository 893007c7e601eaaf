/** Decides whether a presented bearer key is valid. Implementations compare in constant time. */
export abstract class ApiKeys {
  abstract verify(key: string): Promise<boolean>;
}
