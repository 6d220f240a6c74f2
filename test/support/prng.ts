/** A small seeded PRNG (mulberry32) so a fast-check seed reproduces a whole fault scenario. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    /** True with probability p. */
    chance: (p: number) => next() < p,
    /** Integer in [0, n). */
    int: (n: number) => Math.floor(next() * n),
  };
}

export type Prng = ReturnType<typeof prng>;
