// Slurm hostlist expressions: "node[01-16],gpu[1-2,5],login" <-> node names.
// cluster.toml names nodes and partitions with them, and TARAS_NODELIST hands a
// job its allocation in the compressed form. A bad expression is a value
// naming the expression, the character at fault and the fix.

/** More names than this from one expression is almost surely a typo (node[1-1000000]). */
export const MAX_HOSTLIST_NAMES = 100_000;

/** Numbers longer than this are not ranges (Number stays exact below 2^53). */
const MAX_DIGITS = 15;

const NAME_CHAR = /[A-Za-z0-9._-]/;
const NAME = /^[A-Za-z0-9._-]+$/;
const DIGIT = /[0-9]/;

export interface HostlistProblem {
  readonly expression: string;
  /** 1-based character position in the expression. */
  readonly column: number;
  readonly message: string;
  readonly fix: string;
}

export type HostlistResult =
  | { readonly ok: true; readonly names: string[] }
  | { readonly ok: false; readonly problem: HostlistProblem };

/** Thrown by `expandHostlist`; `parseHostlist` returns the same problem as a value. */
export class HostlistError extends Error {
  constructor(readonly problem: HostlistProblem) {
    super(`bad hostlist "${problem.expression}": ${problem.message} (fix: ${problem.fix})`);
    this.name = 'HostlistError';
  }
}

/** One `lo` or `lo-hi` inside brackets; every number is padded to the width of `lo`. */
interface RangeEntry {
  readonly lo: number;
  readonly hi: number;
  readonly width: number;
}

/** A name pattern: literal text and bracket groups, expanded as their cartesian product. */
type Part = string | readonly RangeEntry[];

class Problem {
  constructor(readonly column: number, readonly message: string, readonly fix: string) {}
}

/**
 * Expands a hostlist expression into names, in the order written (first
 * bracket group outermost). Throws `HostlistError` for a bad expression.
 */
export function expandHostlist(expression: string, limit = MAX_HOSTLIST_NAMES): string[] {
  const result = parseHostlist(expression, limit);
  if (!result.ok) throw new HostlistError(result.problem);
  return result.names;
}

/** `expandHostlist` as a value: `{ ok: false, problem }` instead of a throw. */
export function parseHostlist(expression: string, limit = MAX_HOSTLIST_NAMES): HostlistResult {
  try {
    const patterns = parsePatterns(expression);
    let total = 0;
    for (const pattern of patterns) total += countNames(pattern);
    if (total > limit) {
      throw new Problem(1, `expands to ${total} names, more than the ${limit} allowed`, 'check the range bounds for a typo');
    }
    return { ok: true, names: patterns.flatMap(expandPattern) };
  } catch (error) {
    if (!(error instanceof Problem)) throw error;
    return { ok: false, problem: { expression, column: error.column, message: error.message, fix: error.fix } };
  }
}

/** The problem as one line: `bad hostlist "node[1-": ... (fix: ...)`. */
export function describeHostlistProblem(problem: HostlistProblem): string {
  return new HostlistError(problem).message;
}

function parsePatterns(expression: string): Part[][] {
  if (expression.trim() === '') throw new Problem(1, 'the hostlist is empty', 'name at least one node, e.g. "node[01-04]"');
  const patterns: Part[][] = [];
  let parts: Part[] = [];
  let literal = '';
  let i = 0;
  const endName = (at: number): void => {
    if (literal !== '') parts.push(literal);
    literal = '';
    if (parts.length === 0) throw new Problem(at + 1, `empty name at character ${at + 1}`, 'remove the extra comma');
    patterns.push(parts);
    parts = [];
  };
  while (i < expression.length) {
    const char = expression[i];
    if (char === ',') {
      endName(i);
      i += 1;
    } else if (/\s/.test(char)) {
      // Spaces are allowed around the commas between names, not inside a name.
      const next = skipSpaces(expression, i);
      const between = (literal === '' && parts.length === 0) || next === expression.length || expression[next] === ',';
      if (!between) throw new Problem(i + 1, `space inside a name at character ${i + 1}`, 'remove the space or separate names with ","');
      i = next;
    } else if (char === '[') {
      if (literal !== '') parts.push(literal);
      literal = '';
      const group = parseBracket(expression, i);
      parts.push(group.entries);
      i = group.end;
    } else if (char === ']') {
      throw new Problem(i + 1, `"]" at character ${i + 1} has no matching "["`, 'remove it or add the "[" that opens the range');
    } else if (NAME_CHAR.test(char)) {
      literal += char;
      i += 1;
    } else {
      throw new Problem(i + 1, `unexpected "${char}" at character ${i + 1}`, 'node names use letters, digits, ".", "_" and "-"');
    }
  }
  endName(expression.length);
  return patterns;
}

function skipSpaces(text: string, from: number): number {
  let i = from;
  while (i < text.length && /\s/.test(text[i])) i += 1;
  return i;
}

/** Parses `[...]` starting at `open`; returns its entries and the index after `]`. */
function parseBracket(expression: string, open: number): { entries: RangeEntry[]; end: number } {
  const entries: RangeEntry[] = [];
  let i = open + 1;
  for (;;) {
    const entryStart = i;
    const lo = readNumber(expression, i, open);
    i = lo.end;
    let hi = lo;
    if (expression[i] === '-') {
      hi = readNumber(expression, i + 1, open);
      i = hi.end;
      if (hi.value < lo.value) {
        throw new Problem(
          entryStart + 1,
          `range ${lo.text}-${hi.text} at character ${entryStart + 1} goes backwards`,
          `write the smaller number first: [${hi.text}-${lo.text}]`,
        );
      }
    }
    entries.push({ lo: lo.value, hi: hi.value, width: lo.text.length });
    const char = expression[i];
    if (char === ',') {
      i += 1;
    } else if (char === ']') {
      return { entries, end: i + 1 };
    } else if (char === undefined) {
      throw new Problem(open + 1, `"[" at character ${open + 1} is never closed`, 'add "]" after the last number of the range');
    } else if (char === '[') {
      throw new Problem(i + 1, `"[" at character ${i + 1} inside another range`, 'close the first range with "]" before opening another');
    } else {
      throw new Problem(i + 1, `unexpected "${char}" at character ${i + 1} inside brackets`, 'write numbers and ranges separated by ",", e.g. [1-4,7]');
    }
  }
}

function readNumber(expression: string, from: number, open: number): { value: number; text: string; end: number } {
  let end = from;
  while (end < expression.length && DIGIT.test(expression[end])) end += 1;
  const text = expression.slice(from, end);
  if (text === '') {
    if (from >= expression.length) {
      throw new Problem(open + 1, `"[" at character ${open + 1} is never closed`, 'add "]" after the last number of the range');
    }
    const found = expression[from];
    const what = found === ']' || found === ',' || found === '-' ? `missing number before "${found}"` : `unexpected "${found}"`;
    throw new Problem(from + 1, `${what} at character ${from + 1} inside brackets`, 'write numbers and ranges separated by ",", e.g. [1-4,7]');
  }
  if (text.length > MAX_DIGITS) throw new Problem(from + 1, `number at character ${from + 1} is too long`, `use at most ${MAX_DIGITS} digits`);
  return { value: Number(text), text, end };
}

function countNames(pattern: readonly Part[]): number {
  let count = 1;
  for (const part of pattern) {
    if (typeof part !== 'string') count *= part.reduce((sum, entry) => sum + entry.hi - entry.lo + 1, 0);
  }
  return count;
}

function expandPattern(pattern: readonly Part[]): string[] {
  let names = [''];
  for (const part of pattern) {
    const pieces = typeof part === 'string' ? [part] : part.flatMap(entryValues);
    names = names.flatMap((prefix) => pieces.map((piece) => prefix + piece));
  }
  return names;
}

function entryValues(entry: RangeEntry): string[] {
  const values: string[] = [];
  for (let n = entry.lo; n <= entry.hi; n += 1) values.push(String(n).padStart(entry.width, '0'));
  return values;
}

// ---- compression ----

/** Compares host names the way people sort them: node2 before node10. */
export function compareHostnames(a: string, b: string): number {
  const chunksA = a.match(/\d+|\D+/g) ?? [];
  const chunksB = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(chunksA.length, chunksB.length); i += 1) {
    const x = chunksA[i];
    const y = chunksB[i];
    if (x === y) continue;
    const numeric = DIGIT.test(x[0]) && DIGIT.test(y[0]);
    if (numeric && Number(x) !== Number(y)) return Number(x) - Number(y);
    if (numeric) return x.length - y.length;
    return x < y ? -1 : 1;
  }
  return chunksA.length - chunksB.length;
}

/**
 * The shortest hostlist expression we find for a set of names (duplicates
 * dropped): the inverse of `expandHostlist` up to order. Names are split into
 * literal text and numeric fields; names of the same shape are merged one
 * field at a time, trying every field order (names have few fields) and
 * keeping the shortest. Throws RangeError for a name a hostlist cannot hold.
 */
export function compressHostlist(names: Iterable<string>): string {
  const shapes = new Map<string, { literals: string[]; fields: string[][] }>();
  for (const name of new Set(names)) {
    if (!NAME.test(name)) {
      throw new RangeError(`compressHostlist: "${name}" is not a node name`);
    }
    const { literals, fields } = splitName(name);
    const key = literals.join('\u0000');
    const shape = shapes.get(key) ?? { literals, fields: [] };
    shape.fields.push(fields);
    shapes.set(key, shape);
  }
  const items: { text: string; first: string }[] = [];
  for (const { literals, fields } of shapes.values()) for (const item of compressShape(literals, fields)) items.push(item);
  items.sort((a, b) => compareHostnames(a.first, b.first));
  return items.map((item) => item.text).join(',');
}

/** "rack1-node01" -> literals ["rack", "-node", ""], fields ["1", "01"]. */
function splitName(name: string): { literals: string[]; fields: string[] } {
  const literals: string[] = [];
  const fields: string[] = [];
  let literal = '';
  for (const chunk of name.match(/\d+|\D+/g) ?? []) {
    if (DIGIT.test(chunk[0]) && chunk.length <= MAX_DIGITS) {
      literals.push(literal);
      fields.push(chunk);
      literal = '';
    } else {
      literal += chunk;
    }
  }
  literals.push(literal);
  return { literals, fields };
}

/** The numbers one field takes in a box, and their rendering ("7" or "[1-4,7]"). */
interface FieldSet {
  readonly tokens: readonly string[];
  readonly text: string;
}

/** A product of token sets, one per numeric field. */
type Box = readonly FieldSet[];

function compressShape(literals: readonly string[], names: readonly string[][]): { text: string; first: string }[] {
  const fieldCount = literals.length - 1;
  let best: Box[] | undefined;
  let bestLength = Infinity;
  for (const order of mergeOrders(fieldCount)) {
    const boxes = mergeAlong(names.map((fields) => fields.map((token) => ({ tokens: [token], text: token }))), order);
    const length = boxes.reduce((sum, box) => sum + renderBox(literals, box).length + 1, 0);
    if (length < bestLength) {
      best = boxes;
      bestLength = length;
    }
  }
  return (best ?? []).map((box) => ({
    text: renderBox(literals, box),
    first: renderBox(literals, box.map(({ tokens }) => ({ tokens, text: sortTokens(tokens)[0] }))),
  }));
}

/** Field orders to try: last field first (Slurm's habit) leads, so it wins ties. */
function mergeOrders(fieldCount: number): number[][] {
  const lastFirst = Array.from({ length: fieldCount }, (_, i) => fieldCount - 1 - i);
  if (fieldCount > 4) return [lastFirst];
  const orders: number[][] = [];
  const permute = (prefix: number[], rest: number[]): void => {
    if (rest.length === 0) orders.push(prefix);
    rest.forEach((field, i) => permute([...prefix, field], [...rest.slice(0, i), ...rest.slice(i + 1)]));
  };
  permute([], lastFirst);
  return orders;
}

/** For each field in turn, merges boxes that agree on every other field. */
function mergeAlong(boxes: Box[], order: readonly number[]): Box[] {
  let current = boxes;
  for (const field of order) {
    const groups = new Map<string, { box: Box; tokens: Set<string> }>();
    for (const box of current) {
      const key = box.map((set, i) => (i === field ? '' : set.text)).join('\u0000');
      const group = groups.get(key) ?? { box, tokens: new Set<string>() };
      for (const token of box[field].tokens) group.tokens.add(token);
      groups.set(key, group);
    }
    current = [...groups.values()].map(({ box, tokens }) => {
      if (tokens.size === box[field].tokens.length) return box;
      const set = { tokens: [...tokens], text: renderTokens([...tokens]) };
      return box.map((old, i) => (i === field ? set : old));
    });
  }
  return current;
}

function renderBox(literals: readonly string[], box: Box): string {
  let text = literals[0];
  box.forEach((set, i) => {
    text += set.text + literals[i + 1];
  });
  return text;
}

function sortTokens(tokens: readonly string[]): string[] {
  return [...tokens].sort((a, b) => Number(a) - Number(b) || a.length - b.length);
}

/** One token as itself; several as "[lo-hi,n,...]", each run keeping the width of its first token. */
function renderTokens(tokens: readonly string[]): string {
  if (tokens.length === 1) return tokens[0];
  const remaining = new Set(tokens);
  const entries: string[] = [];
  for (const token of sortTokens(tokens)) {
    if (!remaining.has(token)) continue;
    remaining.delete(token);
    let value = Number(token);
    let last = token;
    for (;;) {
      const next = String(value + 1).padStart(token.length, '0');
      if (!remaining.has(next)) break;
      remaining.delete(next);
      value += 1;
      last = next;
    }
    entries.push(last === token ? token : `${token}-${last}`);
  }
  return `[${entries.join(',')}]`;
}
