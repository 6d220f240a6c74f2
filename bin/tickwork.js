#!/usr/bin/env node
// The `tickwork` command. tickwork ships TypeScript sources, so this shim registers tsx's loader
// in this process (no child process: signals and exit codes stay as they are) and runs the CLI.
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
