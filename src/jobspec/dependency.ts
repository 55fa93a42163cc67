// sbatch's --dependency, as Slurm reads it: `after:ID[:ID...][+MIN]`,
// `afterany:ID[:ID...]`, `afterok:...`, `afternotok:...`, `singleton`, joined
// by `,` (all must be met) or `?` (any one is enough), not both. An ID is a
// job, or a job array (all its tasks), or ARRAYID_TASK (one task, 12_3); the
// controller resolves them. Pure.

export const DEPENDENCY_TYPES = ['after', 'afterany', 'afterok', 'afternotok', 'singleton'] as const;
export type DependencyType = (typeof DEPENDENCY_TYPES)[number];

export interface DependencyItem {
  readonly type: DependencyType;
  /** The jobs it names (none for singleton); an array's id stands for all its tasks. */
  readonly ids: readonly number[];
  /** Tasks of job arrays it names, as ARRAYID_TASK (afterok:12_3); absent when none. */
  readonly tasks?: readonly string[];
  /** `after:ID+MIN`: this many minutes after the job started. */
  readonly minutes?: number;
}

export interface DependencySpec {
  /** As written, for display. */
  readonly text: string;
  /** true: `,` (every item); false: `?` (any item). */
  readonly all: boolean;
  readonly items: readonly DependencyItem[];
}

const FORMS = 'after:ID[+MIN], afterany:ID, afterok:ID, afternotok:ID or singleton (several IDs with :; an array task as ARRAYID_TASK, 12_3), joined by , (all) or ? (any)';

export function parseDependency(raw: string): { ok: true; value: DependencySpec } | { ok: false; message: string } {
  const text = raw.trim();
  const bad = (why: string) => ({ ok: false as const, message: `got '${raw}': ${why}; expected ${FORMS}` });
  if (text === '') return bad('it is empty');
  if (text.includes(',') && text.includes('?')) return bad(', (all) and ? (any) cannot be mixed');
  const all = !text.includes('?');
  const items: DependencyItem[] = [];
  for (const written of text.split(all ? ',' : '?')) {
    // Plain job ids (12, 12:13) are afterany, as Slurm reads them.
    const part = /^\s*\d+(_\d+)?(:\d+(_\d+)?)*\s*$/.test(written) ? `afterany:${written.trim()}` : written;
    const [type, ...rest] = part.trim().split(':');
    if (!(DEPENDENCY_TYPES as readonly string[]).includes(type ?? '')) {
      return bad(`'${type}' is not a dependency type${type === 'aftercorr' || type === 'expand' ? ' Taras supports' : ''}`);
    }
    if (type === 'singleton') {
      if (rest.length > 0) return bad('singleton takes no job ids');
      items.push({ type: 'singleton', ids: [] });
      continue;
    }
    if (rest.length === 0) return bad(`${type} needs at least one job id (${type}:ID)`);
    const ids: number[] = [];
    const tasks: string[] = [];
    let minutes: number | undefined;
    for (const [index, word] of rest.entries()) {
      const match = /^(\d+)(?:_(\d{1,9}))?(?:\+(\d+))?$/.exec(word);
      if (match === null || Number(match[1]) <= 0 || !Number.isSafeInteger(Number(match[1]))) return bad(`'${word}' is not a job id`);
      if (match[3] !== undefined) {
        if (type !== 'after' || index !== rest.length - 1) return bad('+MIN goes only after the last id of after:');
        minutes = Number(match[3]);
      }
      if (match[2] === undefined) ids.push(Number(match[1]));
      else tasks.push(`${Number(match[1])}_${Number(match[2])}`);
    }
    items.push({ type: type as DependencyType, ids, ...(tasks.length === 0 ? {} : { tasks }), ...(minutes === undefined ? {} : { minutes }) });
  }
  return { ok: true, value: { text, all, items } };
}
