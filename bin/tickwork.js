#!/usr/bin/env node
// The `tickwork` command: the compiled CLI (`npm run build` writes dist/).
import "../dist/cli.js";
