/**
 * @module
 * Cron grammar: @-macros, 5 or 6 fields, `W`, a lowercase `l` and overlapping list items handled
 * here; everything else (ranges, steps, lists, names, `L`, `#`, value ranges) parsed and validated
 * by cron-parser, whose expanded field sets become our {@link CronFields}. Evaluation is ours
 * (ADR-0004).
 */
import { CronExpressionParser } from "cron-parser";
import { ScheduleError } from "./errors.ts";
import type { CronFields } from "./types.ts";
import { GREGORIAN_CYCLE_DAYS, nextWallSecond } from "./wall-clock.ts";

/** Supported macros and what they stand for. */
export const CRON_MACROS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

const FIELD_NAMES = ["second", "minute", "hour", "day-of-month", "month", "day-of-week"] as const;
const PROBE_BASE = ["0", "0", "0", "*", "*", "*"];
const DAY_OF_MONTH = 3;
const DAY_OF_WEEK = 5;
/** cron-parser's evaluation options do not matter for parsing; fixed so parsing is pure. */
const PARSER_OPTIONS = { tz: "UTC", currentDate: 0 } as const;
/** `H` (cron-parser's hashed values) as a token of its own, not inside a name such as `THU`. */
const HASH = /(?<![a-z])h(?![a-z])/i;
const NEAREST_WEEKDAY = /^(\d+)W$/i;
const LAST_WEEKDAY = /^LW$/i;

/** The result of parsing a cron spec. */
export interface CronParts {
  fields: CronFields;
  /** See {@link ParsedCron.fixedTime}. */
  fixedTime: boolean;
}

/**
 * Parse a cron expression or @-macro.
 *
 * @throws {ScheduleError} `invalid_cron` or `never_fires`.
 */
export function parseCron(spec: string): CronParts {
  const source = spec.startsWith("@") ? expandMacro(spec) : spec;
  const atoms = source.split(/\s+/);
  if (atoms.length !== 5 && atoms.length !== 6) {
    throw invalid(
      spec,
      `expected 5 fields (minute hour day-of-month month day-of-week) or 6 (a leading second), got ${atoms.length}`,
    );
  }
  const six = atoms.length === 5 ? ["0", ...atoms] : atoms;
  six.forEach((atom, i) => {
    if (HASH.test(atom)) {
      throw invalid(spec, `${FIELD_NAMES[i]} field "${atom}": H (hashed values) is not supported`);
    }
  });
  // cron-parser reads `L` only as a capital; crontab users write `l` as well (as they write `w`
  // and names in any case, which are read already). Only the day fields have an `L`; no weekday
  // name has an `l` in it (month names do, so the month field is left alone).
  const normalized = six.map((atom, i) =>
    i === DAY_OF_MONTH || i === DAY_OF_WEEK ? atom.replace(/l/g, "L") : atom,
  );
  const dayOfMonth = splitWeekdayItems(spec, normalized[DAY_OF_MONTH]!);
  normalized[DAY_OF_MONTH] = dayOfMonth.rest ?? "*";
  const forParser = normalized.map((field, i) => mergeOverlappingItems(i, field));
  const parsed = parseWithCronParser(spec, forParser, six);
  const noWeekdayItems = dayOfMonth.nearest.length === 0 && !dayOfMonth.last;
  const dom = parsed.dayOfMonth;
  const dow = parsed.dayOfWeek;
  let daysOfMonth = 0;
  let lastDayOfMonth = false;
  if (dayOfMonth.rest !== undefined) {
    for (const v of dom.values) {
      if (v === "L") lastDayOfMonth = true;
      else daysOfMonth = (daysOfMonth | (1 << v)) >>> 0;
    }
  }
  let daysOfWeek = 0;
  let lastDaysOfWeek = 0;
  for (const v of dow.values) {
    if (typeof v === "number") daysOfWeek |= 1 << (v % 7);
    else lastDaysOfWeek |= 1 << (Number(String(v).charAt(0)) % 7);
  }
  const fields: CronFields = {
    seconds: numbers(parsed.second.values),
    minutes: numbers(parsed.minute.values),
    hours: numbers(parsed.hour.values),
    months: numbers(parsed.month.values).reduce((mask, m) => mask | (1 << m), 0),
    dayOfMonthAny: noWeekdayItems && dom.isWildcard,
    daysOfMonth,
    lastDayOfMonth,
    nearestWeekdays: dayOfMonth.nearest,
    lastWeekdayOfMonth: dayOfMonth.last,
    dayOfWeekAny: dow.isWildcard,
    daysOfWeek,
    lastDaysOfWeek,
    nthDayOfWeek: dow.nthDay,
  };
  if (nextWallSecond(fields, 0, GREGORIAN_CYCLE_DAYS * 86_400) === null) {
    throw new ScheduleError(
      "never_fires",
      `Cron expression "${spec}" never fires: no date matches its day and month fields`,
    );
  }
  return { fields, fixedTime: !/[*?/]/.test(six[2]!) };
}

function expandMacro(spec: string): string {
  const expanded = CRON_MACROS[spec.toLowerCase()];
  if (expanded === undefined) {
    throw invalid(spec, `unknown macro; use one of ${Object.keys(CRON_MACROS).join(", ")}`);
  }
  return expanded;
}

/** Take `nW` and `LW` items out of the day-of-month list; cron-parser does not know them. */
function splitWeekdayItems(
  spec: string,
  field: string,
): { rest: string | undefined; nearest: number[]; last: boolean } {
  const rest: string[] = [];
  const nearest: number[] = [];
  let last = false;
  for (const item of field.split(",")) {
    const match = NEAREST_WEEKDAY.exec(item);
    if (match) {
      const n = Number(match[1]);
      if (n < 1 || n > 31) {
        throw invalid(spec, `day-of-month field "${field}": ${item} is outside 1-31`);
      }
      if (!nearest.includes(n)) nearest.push(n);
    } else if (LAST_WEEKDAY.test(item)) {
      last = true;
    } else if (/w/i.test(item)) {
      throw invalid(
        spec,
        `day-of-month field "${field}": W must follow a single day, as in 15W or LW`,
      );
    } else {
      rest.push(item);
    }
  }
  return {
    rest: rest.length > 0 ? rest.join(",") : undefined,
    nearest: nearest.sort((a, b) => a - b),
    last,
  };
}

type CronParserFields = ReturnType<typeof CronExpressionParser.parse>["fields"];

/** The values cron-parser expanded a field to, by our index (0 = second … 5 = day-of-week). */
function valuesAt(fields: CronParserFields, index: number): readonly (number | string)[] {
  const all = [
    fields.second.values,
    fields.minute.values,
    fields.hour.values,
    fields.dayOfMonth.values,
    fields.month.values,
    fields.dayOfWeek.values,
  ];
  return all[index]!;
}

/**
 * The field with overlapping list items merged into one list of their distinct values.
 *
 * cron-parser refuses a list whose items share a value (`0,1,2,3,4,5,6,7` day-of-week, where 0 and
 * 7 are both Sunday; `1-15/5,6`; `*\/10,30-35`); crontab and croner take the union, and so do
 * we. Each item is expanded by cron-parser alone; the field is rewritten only when two items
 * share a value, so every list cron-parser accepts reaches it unchanged. A field with an item
 * cron-parser refuses is left as it is, for the full parse to report with the user's text. `#`
 * cannot be in a list (cron-parser refuses it there), so a field holding one is left as it is.
 */
function mergeOverlappingItems(index: number, field: string): string {
  if (!field.includes(",") || field.includes("#")) return field;
  const distinct = new Map<string, number | string>();
  let total = 0;
  for (const item of field.split(",")) {
    const probe = [...PROBE_BASE];
    probe[index] = item;
    let values: readonly (number | string)[];
    try {
      values = valuesAt(CronExpressionParser.parse(probe.join(" "), PARSER_OPTIONS).fields, index);
    } catch {
      return field;
    }
    for (const value of values) {
      const canonical = index === DAY_OF_WEEK ? sundayAsZero(value) : value;
      distinct.set(String(canonical), canonical);
      total++;
    }
  }
  if (distinct.size === total) return field;
  const merged = [...distinct.values()];
  const numeric = merged.filter((v): v is number => typeof v === "number").sort((a, b) => a - b);
  return [...numeric, ...merged.filter((v) => typeof v === "string")].join(",");
}

/** Day-of-week 7 is Sunday, as 0 is (also in `7L`): one value for one day. */
function sundayAsZero(value: number | string): number | string {
  if (typeof value === "number") return value % 7;
  return /^7L$/.test(value) ? "0L" : value;
}

/** Parse with cron-parser; errors name the field at fault with its text in `display`. */
function parseWithCronParser(
  spec: string,
  six: readonly string[],
  display: readonly string[],
): CronParserFields {
  try {
    return CronExpressionParser.parse(six.join(" "), PARSER_OPTIONS).fields;
  } catch (error) {
    // Name the field at fault: parse each field alone against a neutral base.
    for (let i = 0; i < 6; i++) {
      const probe = [...PROBE_BASE];
      probe[i] = six[i]!;
      try {
        CronExpressionParser.parse(probe.join(" "), PARSER_OPTIONS);
      } catch (fieldError) {
        throw invalid(
          spec,
          `${FIELD_NAMES[i]} field "${display[i]}": ${messageOf(fieldError)}`,
          fieldError,
        );
      }
    }
    // Every field is fine alone: the combination is impossible (a day that no listed month has).
    if (/day of month/i.test(messageOf(error))) {
      throw new ScheduleError(
        "never_fires",
        `Cron expression "${spec}" never fires: no listed month has its day of month`,
        { cause: error },
      );
    }
    throw invalid(spec, messageOf(error), error);
  }
}

function numbers(values: readonly (number | string)[]): number[] {
  return [...new Set(values.filter((v): v is number => typeof v === "number"))].sort(
    (a, b) => a - b,
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function invalid(spec: string, detail: string, cause?: unknown): ScheduleError {
  return new ScheduleError(
    "invalid_cron",
    `Invalid cron expression "${spec}": ${detail}`,
    cause === undefined ? undefined : { cause },
  );
}
