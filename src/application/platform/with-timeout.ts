/**
 * `work`'s outcome, or what `onTimeout` returns (or throws) once `ms` pass first. The timer is
 * cleared either way, so it never keeps the process alive.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(onTimeout());
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    }, ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
