/**
 * @module
 * A seeded generator of cron expressions for the cross-library agreement tests: ranges, steps,
 * lists, names, `L`, `W`, `LW`, `#`, optional seconds — the grammar cron-parser, croner and tickwork
 * share (no `H`, no `5#L`, no numeric-prefix steps such as `5/15`).
 */

/** mulberry32: a tiny seeded PRNG, so a failure reproduces from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const SECONDS = ["0", "30", "*/15", "*/20", "5,35", "10-50/20", "0-10/5", "59"];
const MINUTES = ["*", "*/5", "*/15", "*/7", "0", "30", "0,30", "15-45/15", "5-10", "59", "45"];
const HOURS = [
  "*",
  "*/2",
  "*/3",
  "0",
  "1",
  "2",
  "3",
  "1-3",
  "2,14",
  "9-17",
  "0-23/4",
  "23",
  "12",
  "0-6/2",
  "1,2,3",
];
const DAYS_OF_MONTH = [
  "1",
  "15",
  "L",
  "1,15",
  "10-20",
  "*/3",
  "15W",
  "1W",
  "LW",
  "31W",
  "28-31",
  "29",
  "31",
  "2-8",
];
const MONTHS = ["*", "*", "*", "*/2", "1-6", "3,10", "2", "JAN-MAR", "*/3", "OCT-DEC", "4,9,11"];
const DAYS_OF_WEEK = [
  "1-5",
  "0",
  "6,0",
  "MON",
  "5L",
  "1#2",
  "FRI#3",
  "0#5",
  "SUN-WED",
  "1L",
  "2,4",
];

/** One expression: 5 fields, or 6 with seconds; day fields mostly one-sided, sometimes both. */
export function randomCron(random: () => number): string {
  const pick = (xs: readonly string[]): string => xs[Math.floor(random() * xs.length)]!;
  const minute = pick(MINUTES);
  const hour = pick(HOURS);
  const month = pick(MONTHS);
  const days = random();
  const dayOfMonth = days < 0.35 ? "*" : days < 0.45 ? "?" : pick(DAYS_OF_MONTH);
  const dayOfWeek =
    dayOfMonth === "*" || dayOfMonth === "?"
      ? random() < 0.4
        ? "*"
        : pick(DAYS_OF_WEEK)
      : random() < 0.75
        ? "*"
        : pick(DAYS_OF_WEEK);
  const five = `${minute} ${hour} ${dayOfMonth} ${month} ${dayOfWeek}`;
  return random() < 0.3 ? `${pick(SECONDS)} ${five}` : five;
}

/** `count` distinct expressions from `seed`, plus the @-macros. */
export function cronCorpus(seed: number, count: number): string[] {
  const random = seededRandom(seed);
  const out = new Set<string>(["@yearly", "@monthly", "@weekly", "@daily", "@hourly"]);
  while (out.size < count) out.add(randomCron(random));
  return [...out];
}
