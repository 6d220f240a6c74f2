/**
 * Fault injection around a real store: a call may "crash" the caller before it reaches the store
 * (nothing written) or after the store applied it (written, but the caller never learns). This is
 * how a function dying between two steps looks from the store's side.
 */
import type { Store } from "../../src/store/port.ts";

/** Thrown in place of a process dying. */
export class InjectedCrash extends Error {
  override name = "InjectedCrash";
}

export type CrashDecision = (method: keyof Store, phase: "before" | "after") => boolean;

/** Wrap `store` so that `decide` can crash any call before or after it is applied. */
export function faultyStore(store: Store, decide: CrashDecision): Store & { crashes: number } {
  const state = { crashes: 0 };
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "crashes") return state.crashes;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        const method = prop as keyof Store;
        if (decide(method, "before")) {
          state.crashes++;
          throw new InjectedCrash(`crash before ${String(method)}`);
        }
        const result = await value.apply(target, args);
        if (decide(method, "after")) {
          state.crashes++;
          throw new InjectedCrash(`crash after ${String(method)}`);
        }
        return result;
      };
    },
  });
  return proxy as Store & { crashes: number };
}
