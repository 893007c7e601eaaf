/** A promise's outcome so far, read without awaiting it: its value, its error, or 'pending'. */
export function outcomeOf<T>(promise: Promise<T>): { now(): T | Error | 'pending' } {
  let outcome: T | Error | 'pending' = 'pending';
  promise.then(
    (value) => (outcome = value),
    (error: Error) => (outcome = error),
  );
  return { now: () => outcome };
}
