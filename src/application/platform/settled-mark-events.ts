/** What the settled marks report as they happen, for the metrics (wired in app.module.ts). */
export type SettledMarkEvents = {
  /** A fresh mark was read (the instance now holds one this new). */
  read(): void;
  /** How long one list waited for its fresh mark: for the creates in flight, mostly. */
  waited(seconds: number): void;
  /** A list got no fresh mark (the store did not answer, or the creates outlasted their limits). */
  refused(): void;
};

export const NO_MARK_EVENTS: SettledMarkEvents = {
  read: () => undefined,
  waited: () => undefined,
  refused: () => undefined,
};
