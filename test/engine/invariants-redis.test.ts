/** The invariant suite (`invariants.ts`) on the redis store, in a file of its own to run in parallel. */
import { describeInvariants } from "./invariants.ts";

describeInvariants("redis");
