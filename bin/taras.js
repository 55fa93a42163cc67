#!/usr/bin/env node
// Entry point: runs the compiled CLI (npm install builds it through the "prepare" script).
import '../dist/src/cli/main.js';
