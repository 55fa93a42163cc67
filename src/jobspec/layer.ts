// Builds one source's SpecLayer value by value, collecting every error rather
// than stopping at the first, so a user fixes a script in one pass.

import type { JobOption } from './options.js';
import type { ItemKey, JobSpecError, JobValues, Origin, Parsed, Source, SpecLayer } from './types.js';

export class LayerBuilder {
  private readonly values: { [K in ItemKey]?: JobValues[K] } = {};
  private readonly origins: { [K in ItemKey]?: Origin } = {};
  private readonly errors: JobSpecError[] = [];
  private readonly warnings: JobSpecError[] = [];

  constructor(readonly source: Source) {}

  /** Later settings of the same item win, as when sbatch sees an option twice. */
  set<K extends ItemKey>(key: K, value: JobValues[K], origin: Origin): void {
    (this.values as Record<ItemKey, unknown>)[key] = value;
    this.origins[key] = origin;
  }

  /** Parses `raw` with the option's parser (or takes its switch value) and sets the item, or records the error. */
  apply(option: JobOption, raw: string | undefined, origin: Origin): void {
    if (option.switchValue !== undefined) {
      if (raw === undefined) this.set(option.key, option.switchValue, origin);
      else this.error(origin, `takes no value (got '${raw}')`);
      return;
    }
    raw ??= option.optionalValue;
    if (raw === undefined) {
      this.error(origin, `needs a value: ${option.valueName ?? 'a value'}`);
      return;
    }
    const parsed = option.parse(raw);
    if (parsed.ok) this.set(option.key, parsed.value, origin);
    else this.error(origin, parsed.message);
  }

  error(origin: Omit<Origin, 'source'>, message: string): void {
    this.errors.push({ source: this.source, file: origin.file, line: origin.line, option: origin.option, message });
  }

  warn(origin: Omit<Origin, 'source'>, message: string): void {
    this.warnings.push({ source: this.source, file: origin.file, line: origin.line, option: origin.option, message });
  }

  result(): Parsed<SpecLayer> {
    if (this.errors.length > 0) return { ok: false, errors: this.errors, warnings: this.warnings };
    return { ok: true, value: { source: this.source, values: this.values, origins: this.origins }, warnings: this.warnings };
  }
}
