// "Did you mean ...?" for misspelt keys and values: the closest known word by
// edit distance, ignoring case and "-" versus "_".

const normalise = (word: string): string => word.toLowerCase().replace(/-/g, '_');

export interface SuggestOptions {
  /** A candidate that starts with the word (three letters or more) counts as one edit: getopt-style abbreviations (`--part`). */
  readonly acceptPrefix?: boolean;
}

/** The closest candidate if it is close enough to be a likely typo, else undefined. */
export function closestWord(word: string, candidates: readonly string[], options: SuggestOptions = {}): string | undefined {
  const target = normalise(word);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const normalised = normalise(candidate);
    const abbreviates = options.acceptPrefix === true && target.length >= 3 && normalised.startsWith(target);
    const distance = Math.min(editDistance(target, normalised), abbreviates ? 1 : Infinity);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const tolerance = Math.max(1, Math.min(3, Math.floor(target.length / 3)));
  return bestDistance <= tolerance ? best : undefined;
}

/** ' (did you mean "x"?)' or nothing. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const close = closestWord(word, candidates);
  return close === undefined ? '' : ` (did you mean "${close}"?)`;
}

/** Levenshtein distance with adjacent transpositions counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i += 1) {
    for (let j = 1; j < cols; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
