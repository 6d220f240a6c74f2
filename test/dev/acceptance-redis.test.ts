/** Acceptance point 3 on the dev server with REDIS_URL (real Redis, a random key prefix). */
import { acceptanceSuite } from "./acceptance.ts";

acceptanceSuite("redis");
