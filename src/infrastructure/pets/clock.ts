/** The time the high-water marks wait by: performance.now() and timers, or a clock a test moves. */
export type Clock = {
  now(): number;
  /** Resolves after `ms`, or as soon as `wake` does. */
  sleep(ms: number, wake: Promise<void>): Promise<void>;
};

export const SYSTEM_CLOCK: Clock = {
  now: () => performance.now(),
  sleep: (ms, wake) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      void wake.then(() => {
        clearTimeout(timer);
        resolve();
      });
    }),
};
