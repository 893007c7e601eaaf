/**
 * A property of a value whose type is not known: a thrown value (not `instanceof Error`, which
 * fails for an error of another realm, as Jest's VM modules make them), a driver's row, a request
 * field Express adds. Undefined when there is none.
 */
export function propertyOf(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, name) : undefined;
}
