// Command-line flags of `taras submit` as the CLI's option parser hands them
// over: values keyed by sbatch's long name (`cpus-per-task`) or its camelCase
// form (`cpusPerTask`, as commander names them), plus the script operand.

import { LayerBuilder } from './layer.js';
import { JOB_OPTIONS, unknownOptionMessage, type JobOption } from './options.js';
import type { Parsed, SpecLayer } from './types.js';

const camelCase = (long: string) => long.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

function optionForFlagKey(key: string, value: string | boolean): JobOption | undefined {
  // commander folds --requeue and --no-requeue into one boolean `requeue`
  if (key === 'requeue' && typeof value === 'boolean') return JOB_OPTIONS.find((o) => o.key === 'requeue' && o.switchValue === value);
  return JOB_OPTIONS.find((o) => o.long === key || camelCase(o.long) === key);
}

/**
 * Pass only the flags the user gave (with commander: those whose value source is
 * 'cli'); undefined values are skipped. Switches take `true`, or a boolean `requeue`.
 */
export function parseFlagValues(
  values: { readonly [flag: string]: string | boolean | undefined },
  command: { readonly script?: string; readonly args?: readonly string[] } = {},
): Parsed<SpecLayer> {
  const builder = new LayerBuilder('flag');
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const option = optionForFlagKey(key, value);
    const written = option === undefined ? `--${key}` : `--${option.long}`;
    if (option === undefined) {
      builder.error({ option: written }, unknownOptionMessage(written));
    } else if (option.switchValue !== undefined) {
      // a string is an error (switches take no value); `requeue: false` chose --no-requeue above
      if (typeof value === 'string') builder.apply(option, value, { source: 'flag', option: written });
      else if (value || key === 'requeue') builder.apply(option, undefined, { source: 'flag', option: written });
    } else if (typeof value === 'boolean' && option.optionalValue !== undefined) {
      if (value) builder.apply(option, undefined, { source: 'flag', option: written }); // bare --nice
    } else if (typeof value === 'boolean') {
      builder.error({ option: written }, `needs a value: ${option.valueName ?? 'a value'}`);
    } else {
      builder.apply(option, value, { source: 'flag', option: written });
    }
  }
  if (command.script !== undefined) builder.set('script', command.script, { source: 'flag', option: 'SCRIPT' });
  if (command.args !== undefined && command.args.length > 0) {
    builder.set('scriptArgs', command.args, { source: 'flag', option: 'ARGS' });
  }
  return builder.result();
}
