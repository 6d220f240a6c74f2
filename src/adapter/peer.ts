/**
 * @module
 * Loading an optional peer dependency: the Redis and queue clients and the Node HTTP server are
 * installed by the apps that use them, not by every app that installs tickwork. When one is
 * missing, say which package to install and what needs it, instead of Node's resolution error.
 */

/** An optional peer dependency is not installed. */
export class MissingPeerError extends Error {
  override readonly name = "MissingPeerError";
  /** The npm package to install. */
  readonly packageName: string;

  constructor(packageName: string, purpose: string, options?: { cause?: unknown }) {
    super(
      `${purpose} needs the npm package "${packageName}", which is not installed: ` +
        `npm install ${packageName}`,
      options,
    );
    this.packageName = packageName;
  }
}

/**
 * `load()` (a dynamic `import()` of `packageName`), or {@link MissingPeerError} when the package
 * cannot be found. Other errors pass through.
 *
 * @example
 * const { Redis } = await loadPeer("ioredis", "REDIS_URL (Redis over TCP)", () => import("ioredis"));
 */
export async function loadPeer<T>(
  packageName: string,
  purpose: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const message = error instanceof Error ? error.message : "";
    if (
      (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
      message.includes(`'${packageName}'`)
    ) {
      throw new MissingPeerError(packageName, purpose, { cause: error });
    }
    throw error;
  }
}
