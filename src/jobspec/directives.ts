// #TARAS and #SBATCH directive lines of a batch script, read the way sbatch
// reads #SBATCH: only in the leading block of comments and blank lines (the
// first command ends it), the prefix at the start of the line, words split on
// blanks with quotes and backslashes, and an unquoted # starting a comment.
// Both prefixes take the same options; #TARAS wins over #SBATCH for the same
// option, whatever the order of the lines, so an unchanged Slurm script runs
// and a #TARAS line can adjust it.

import { LayerBuilder } from './layer.js';
import { optionByLong, optionByShort, unknownOptionMessage } from './options.js';
import type { Parsed, SpecLayer } from './types.js';

export const DIRECTIVE = '#TARAS';
/** Slurm's prefix, read exactly like #TARAS (which wins for the same option). */
export const SBATCH_DIRECTIVE = '#SBATCH';

/** Splits the text after #TARAS into words as sbatch does, or names the unmatched quote. */
export function splitDirectiveWords(text: string): string[] | { unmatchedQuote: string } {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
      else if (char === '\\' && i + 1 < text.length) word += text[++i];
      else word += char;
    } else if (char === '\\' && i + 1 < text.length) {
      word = (word ?? '') + text[++i];
    } else if (char === '"' || char === "'") {
      quote = char;
      word ??= '';
    } else if (char === '#') {
      break; // the rest of the line is a comment
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (quote !== undefined) return { unmatchedQuote: quote };
  if (word !== undefined) words.push(word);
  return words;
}

/**
 * Reads options from words: `--opt=value`, `--opt value`, `-X value`, `-Xvalue`.
 * Every word must be an option or its value.
 */
function applyWords(builder: LayerBuilder, words: readonly string[], file: string, line: number, prefix: string): void {
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    const long = /^--([^=]+)(?:=(.*))?$/s.exec(word);
    const short = long === null ? /^-([A-Za-z])(.*)$/s.exec(word) : null;
    if (long === null && short === null) {
      builder.error({ file, line }, `'${word}' is not an option: a ${prefix} line holds options such as --time=10`);
      continue;
    }
    const written = long !== null ? `--${long[1]}` : `-${short![1]}`;
    const option = long !== null ? optionByLong(long[1]) : optionByShort(short![1]);
    if (option === undefined) {
      builder.error({ file, line, option: written }, unknownOptionMessage(written));
      // its value, if it had one, is not a second error
      const valueAttached = long !== null ? long[2] !== undefined : short![2] !== '';
      if (!valueAttached && i + 1 < words.length && !words[i + 1].startsWith('-')) i++;
      continue;
    }
    let raw = long !== null ? long[2] : short![2] === '' ? undefined : short![2];
    if (raw === undefined && option.switchValue === undefined && option.optionalValue === undefined && i + 1 < words.length) raw = words[++i];
    builder.apply(option, raw, { source: 'directive', file, line, option: written });
  }
}

/**
 * The #TARAS options of a batch script, with the line of each. Like sbatch it
 * requires a `#!` first line and Unix line ends, and stops at the first line that
 * is neither blank nor a comment; #TARAS lines after it are ignored with a warning.
 * `file` names the script in messages.
 */
export function parseDirectives(scriptText: string, file = 'script'): Parsed<SpecLayer> {
  const builder = new LayerBuilder('directive');
  const lines = scriptText.split('\n');
  const dosLine = lines.findIndex((text) => text.endsWith('\r'));
  if (dosLine >= 0) {
    builder.error({ file, line: dosLine + 1 }, 'the script has DOS line breaks (\\r\\n): convert it with dos2unix');
    return builder.result();
  }
  if (!lines[0].startsWith('#!')) {
    builder.error({ file, line: 1 }, 'a batch script must start with #! and an interpreter, e.g. #!/bin/bash');
  }
  // #SBATCH lines build their own layer, laid under the #TARAS one: #TARAS wins whatever the line order.
  const sbatch = new LayerBuilder('directive');
  let firstCommand: number | undefined;
  for (const [index, text] of lines.entries()) {
    const line = index + 1;
    const prefix = [DIRECTIVE, SBATCH_DIRECTIVE].find((p) => text.startsWith(p) && (text.length === p.length || /\s/.test(text[p.length])));
    if (prefix === undefined) {
      const trimmed = text.trim();
      if (firstCommand === undefined && trimmed !== '' && !trimmed.startsWith('#')) firstCommand = line;
      continue;
    }
    if (firstCommand !== undefined) {
      builder.warn({ file, line }, `ignored: ${prefix} lines after the first command (line ${firstCommand}) are not read, as sbatch does; move it above line ${firstCommand}`);
      continue;
    }
    const target = prefix === DIRECTIVE ? builder : sbatch;
    const words = splitDirectiveWords(text.slice(prefix.length));
    if (!Array.isArray(words)) target.error({ file, line }, `unmatched ${words.unmatchedQuote} quote`);
    else applyWords(target, words, file, line, prefix);
  }
  return underlay(sbatch.result(), builder.result());
}

/** `lower`'s values where `upper` has none for the same item; the errors and warnings of both, in line order. */
function underlay(lower: Parsed<SpecLayer>, upper: Parsed<SpecLayer>): Parsed<SpecLayer> {
  const byLine = (a: { line?: number }, b: { line?: number }) => (a.line ?? 0) - (b.line ?? 0);
  const warnings = [...lower.warnings, ...upper.warnings].sort(byLine);
  if (!lower.ok || !upper.ok) {
    const errors = [...(lower.ok ? [] : lower.errors), ...(upper.ok ? [] : upper.errors)].sort(byLine);
    return { ok: false, errors, warnings };
  }
  return {
    ok: true,
    value: {
      source: 'directive',
      values: { ...lower.value.values, ...upper.value.values },
      origins: { ...lower.value.origins, ...upper.value.origins },
    },
    warnings,
  };
}
