// Durations as Slurm writes them in sacct columns and in mail subjects.

/** `HH:MM:SS`, or `D-HH:MM:SS` from one day on (sacct's Elapsed and Timelimit, the mail subjects' times). */
export function clockDuration(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const days = Math.floor(whole / 86_400);
  const two = (n: number) => String(n).padStart(2, '0');
  const clock = `${two(Math.floor((whole % 86_400) / 3600))}:${two(Math.floor((whole % 3600) / 60))}:${two(whole % 60)}`;
  return days > 0 ? `${days}-${clock}` : clock;
}
