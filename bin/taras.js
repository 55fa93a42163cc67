#!/usr/bin/env node
// Entry point: runs the compiled CLI, bundled into one file (npm install builds it
// through the "prepare" script: tsc, then scripts/bundle-cli.mjs).
import '../dist/src/cli/main.bundle.js';
