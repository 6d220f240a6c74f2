/** Acceptance point 3 on the dev server with the in-memory store. */
import { acceptanceSuite } from "./acceptance.ts";

acceptanceSuite("memory");
