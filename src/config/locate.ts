// Where a key lives in a TOML text. The TOML parser returns plain values
// without positions, so validation errors find their line here: a forgiving
// scan of headers, keys, arrays and inline tables that maps key paths such as
// `partitions[1].max_time` or `nodes[2].cpus` (also inside `nodes = [{...}]`)
// to line numbers. It never fails, so a syntax error's line can be named too.

/** `nodes[0].cpus` -> `nodes[0]`; `nodes[0]` -> `nodes`; `cluster` -> ''. */
export function parentPath(path: string): string {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut <= 0 ? '' : path.slice(0, cut);
}

const join = (table: string, key: string): string => (table === '' ? key : `${table}.${key}`);

export class SourceIndex {
  private readonly lineByPath = new Map<string, number>();
  /** Per line (index = line - 1): the first key path met on it, or the table it is in. */
  private readonly pathByLine: string[] = [];

  constructor(text: string) {
    new Scanner(text, (path, line) => {
      if (!this.lineByPath.has(path)) this.lineByPath.set(path, line);
      this.pathByLine[line - 1] ??= path;
    }, (table, line) => {
      this.pathByLine[line - 1] ??= table;
    }).run();
  }

  /** The line of a key path, else of its nearest enclosing key or table, else 1. */
  lineOf(path: string): number {
    for (let current = path; current !== ''; current = parentPath(current)) {
      const line = this.lineByPath.get(current);
      if (line !== undefined) return line;
    }
    return 1;
  }

  /** The key path written on a line, or the table the line belongs to ('' at top level). */
  pathAt(line: number): string {
    return this.pathByLine[line - 1] ?? '';
  }
}

const KEY_CHAR = /[A-Za-z0-9_-]/;

/** A character walk over TOML; every loop advances, whatever the input. */
class Scanner {
  private i = 0;
  private line = 1;
  private table = '';
  private readonly arrayCounts = new Map<string, number>();

  constructor(
    private readonly text: string,
    private readonly found: (path: string, line: number) => void,
    private readonly inTable: (table: string, line: number) => void,
  ) {}

  run(): void {
    while (this.i < this.text.length) {
      this.skip('comments');
      const char = this.text[this.i];
      if (char === undefined) break;
      if (char === '\n') {
        this.advance();
      } else if (char === '[') {
        this.header();
      } else {
        const key = this.key();
        if (key.length > 0 && this.text[this.i] === '=') {
          this.i += 1;
          const path = join(this.table, key.join('.'));
          this.found(path, this.line);
          this.value(path);
        }
        this.skipToLineEnd();
      }
    }
  }

  /** `[a.b]` or `[[a.b]]`; `[[x]]` numbers its tables x[0], x[1], ... */
  private header(): void {
    const isArray = this.text[this.i + 1] === '[';
    this.i += isArray ? 2 : 1;
    const parts = this.key();
    let path = '';
    let arrayPath: string | undefined;
    parts.forEach((part, index) => {
      path = join(path, part);
      if (isArray && index === parts.length - 1) {
        const next = (this.arrayCounts.get(path) ?? -1) + 1;
        this.arrayCounts.set(path, next);
        arrayPath = path;
        path = `${path}[${next}]`;
      } else if (this.arrayCounts.has(path)) {
        path = `${path}[${this.arrayCounts.get(path)}]`;
      }
    });
    this.table = path;
    this.found(path, this.line);
    if (arrayPath !== undefined) this.found(arrayPath, this.line); // the first [[x]] is also where the array x is
    this.skipToLineEnd();
  }

  /** A dotted key, bare or quoted parts; stops at '=' or anything else. */
  private key(): string[] {
    const parts: string[] = [];
    for (;;) {
      this.skip('spaces');
      const char = this.text[this.i];
      if (char === '"' || char === "'") {
        const start = this.i;
        this.string();
        const raw = this.text.slice(start, this.i);
        parts.push(char === "'" ? raw.slice(1, -1) : safeJson(raw));
      } else if (char !== undefined && KEY_CHAR.test(char)) {
        const start = this.i;
        while (this.i < this.text.length && KEY_CHAR.test(this.text[this.i])) this.i += 1;
        parts.push(this.text.slice(start, this.i));
      } else {
        return parts;
      }
      this.skip('spaces');
      if (this.text[this.i] !== '.') return parts;
      this.i += 1;
    }
  }

  private value(path: string): void {
    this.skip('spaces');
    const char = this.text[this.i];
    if (char === '"' || char === "'") {
      this.string();
    } else if (char === '[') {
      this.i += 1;
      for (let index = 0; ; index += 1) {
        this.skip('lines');
        if (this.i >= this.text.length || this.text[this.i] === ']') break;
        const element = `${path}[${index}]`;
        this.found(element, this.line);
        const before = this.i;
        this.value(element);
        this.skip('lines');
        if (this.text[this.i] === ',') this.i += 1;
        else if (this.i === before) this.advance();
      }
      this.i += 1;
    } else if (char === '{') {
      this.i += 1;
      for (;;) {
        this.skip('spaces');
        const next = this.text[this.i];
        if (next === undefined || next === '}' || next === '\n') break;
        const key = this.key();
        if (key.length === 0 || this.text[this.i] !== '=') {
          this.advance();
          continue;
        }
        this.i += 1;
        const inner = join(path, key.join('.'));
        this.found(inner, this.line);
        this.value(inner);
        this.skip('spaces');
        if (this.text[this.i] === ',') this.i += 1;
      }
      if (this.text[this.i] === '}') this.i += 1;
    } else {
      while (this.i < this.text.length && !/[,\]}\n#]/.test(this.text[this.i])) this.i += 1;
    }
  }

  /** A basic, literal or multi-line string starting at i; ends after its closing quote (or the text). */
  private string(): void {
    const quote = this.text[this.i];
    const triple = this.text.startsWith(quote.repeat(3), this.i);
    this.i += triple ? 3 : 1;
    while (this.i < this.text.length) {
      const char = this.text[this.i];
      if (char === '\\' && quote === '"') {
        this.i += 1;
        this.advance();
      } else if (triple ? this.text.startsWith(quote.repeat(3), this.i) : char === quote) {
        this.i += triple ? 3 : 1;
        while (triple && this.text[this.i] === quote) this.i += 1;
        return;
      } else if (char === '\n' && !triple) {
        return;
      } else {
        this.advance();
      }
    }
  }

  /** Skips spaces and tabs; with 'comments' a comment too; with 'lines' newlines and comments (inside arrays). */
  private skip(what: 'spaces' | 'comments' | 'lines'): void {
    for (;;) {
      const char = this.text[this.i];
      if (char === ' ' || char === '\t' || char === '\r') this.i += 1;
      else if (char === '\n' && what === 'lines') this.advance();
      else if (char === '#' && what !== 'spaces') this.skipComment();
      else return;
    }
  }

  private skipComment(): void {
    while (this.i < this.text.length && this.text[this.i] !== '\n') this.i += 1;
  }

  private skipToLineEnd(): void {
    while (this.i < this.text.length && this.text[this.i] !== '\n') {
      if (this.text[this.i] === '"' || this.text[this.i] === "'") this.string();
      else this.i += 1;
    }
    this.inTable(this.table, this.line);
  }

  /** Moves one character, counting lines. */
  private advance(): void {
    if (this.text[this.i] === '\n') {
      this.inTable(this.table, this.line);
      this.line += 1;
    }
    this.i += 1;
  }
}

function safeJson(quoted: string): string {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted.slice(1, -1);
  }
}
