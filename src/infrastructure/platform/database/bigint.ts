/** bigint arrives as a string; a value a JSON number cannot carry exactly is refused, never rounded. */
export function fromBigint(value: unknown): number {
  const number = typeof value === 'string' || typeof value === 'number' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number))
    throw new Error(`bigint ${String(value)} exceeds 2^53-1 and cannot be returned exactly`);
  return number;
}
