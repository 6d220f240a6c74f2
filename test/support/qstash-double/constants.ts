/**
 * The fixed credentials of QStash's local dev server (`@upstash/qstash` `src/dev-server/constants.ts`,
 * upstash/docs `qstash/howto/local-development.mdx`): the double's defaults.
 */

/** `QSTASH_TOKEN` of the dev server's default user. */
export const DEV_TOKEN = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=";
/** `QSTASH_CURRENT_SIGNING_KEY` of the dev server. */
export const DEV_CURRENT_SIGNING_KEY = "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r";
/** `QSTASH_NEXT_SIGNING_KEY` of the dev server. */
export const DEV_NEXT_SIGNING_KEY = "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs";
