/** The invariant suite (`invariants.ts`) on the memory store, in a file of its own to run in parallel. */
import { describeInvariants } from "./invariants.ts";

describeInvariants("memory");
