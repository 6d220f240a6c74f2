import { expect, test } from "vitest";
import { PagedList } from "./paginate.ts";

const pages: Record<string, { items: number[]; cursor?: string }> = {
  start: { items: [1, 2], cursor: "a" },
  a: { items: [3, 4], cursor: "b" },
  b: { items: [5] },
};

function list(start?: string) {
  const asked: (string | undefined)[] = [];
  const paged = new PagedList(async (cursor) => {
    asked.push(cursor);
    return pages[cursor ?? "start"]!;
  }, start);
  return { paged, asked };
}

test("iterates items across pages, lazily", async () => {
  const { paged, asked } = list();
  const seen: number[] = [];
  for await (const n of paged) {
    seen.push(n);
    if (n === 3) break;
  }
  expect(seen).toEqual([1, 2, 3]);
  expect(asked).toEqual([undefined, "a"]);
  expect(await list().paged.toArray()).toEqual([1, 2, 3, 4, 5]);
});

test("starts from a cursor; toArray stops at max", async () => {
  expect(await list("a").paged.toArray()).toEqual([3, 4, 5]);
  const { paged, asked } = list();
  expect(await paged.toArray(2)).toEqual([1, 2]);
  expect(asked).toEqual([undefined]);
});

test("a cursor seen twice ends the iteration instead of looping", async () => {
  const loop = new PagedList(async () => ({ items: [1], cursor: "same" }));
  expect(await loop.toArray()).toEqual([1, 1]);
});
