/**
 * @module
 * A promise a test settles by hand (a module without hooks: any test file may import it).
 */

/** A promise the test settles: `open()` lets everything waiting on `promise` go on. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
