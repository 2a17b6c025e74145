#!/usr/bin/env node
// The `rentbridge` command. Runs the compiled CLI (`npm run build` first).
import '../dist/src/cli/main.js';
