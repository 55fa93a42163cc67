// Advance reservations and maintenance windows: whole nodes held over a
// time window in the plan (seed 002: reserved capacity is another hold;
// Slurm's `scontrol create reservation`). A reservation lets its users' jobs
// (`--reservation NAME`) run on its nodes within its time; a maintenance
// window (`taras admin shutdown|drain --at T --until T2`, or a reservation
// created with --maint) is a reservation that shows as maintenance. Every
// other job plans around them, so no job is started that would run into one.
// Kept in the store's settings (one JSON list); a stored entry that does not
// read back is logged and dropped, never a reason not to start.

import * as v from 'valibot';
import { RESERVATION_NAME } from '../api/types.js';
import type { PlanHold } from '../core/node-plan.js';
import type { JsonValue } from '../store/events.js';

export const RESERVATIONS_SETTING = 'reservations';

export type ReservationKind = 'reservation' | 'maintenance';

export interface Reservation {
  readonly name: string;
  readonly kind: ReservationKind;
  readonly startMs: number;
  readonly endMs: number;
  readonly nodes: readonly string[];
  /** Who may run jobs in it (user names, `@group`); empty: administrators only. */
  readonly users: readonly string[];
  readonly reason: string;
  readonly createdBy: string;
  /** When it was created (unique among reservations): jobs in it keep this, so a later one of the same name is not theirs. */
  readonly createdMs: number;
}

/** The owner of a reservation's hold in the plan: `reservation:NAME` or `maintenance:NAME`. */
export const holdOwner = (reservation: Pick<Reservation, 'kind' | 'name'>): string => `${reservation.kind}:${reservation.name}`;

/** Who holds a hold of the plan: `job:ID` (src/core/policies/nodes.ts jobOwner) or a reservation's holdOwner. */
export function ownerOf(owner: string): { kind: 'job' | ReservationKind; name: string } {
  const colon = owner.indexOf(':');
  const kind = owner.slice(0, colon);
  return { kind: kind === 'job' || kind === 'maintenance' ? kind : 'reservation', name: owner.slice(colon + 1) };
}


/** The plan's hold of a reservation: every CPU and all memory of its nodes, from its start (rounded down) to its end (rounded up). */
export function holdOf(reservation: Reservation): PlanHold {
  return {
    owner: holdOwner(reservation), start: Math.floor(reservation.startMs / 1000), end: Math.ceil(reservation.endMs / 1000),
    nodes: reservation.nodes, cpus: 0, memoryMiB: 0, whole: true,
  };
}

/** A stored reservation as it must read back (entries written by this version always do). */
const StoredReservationSchema = v.pipe(
  v.object({
    name: v.pipe(v.string(), v.regex(RESERVATION_NAME)),
    kind: v.picklist(['reservation', 'maintenance']),
    startMs: v.pipe(v.number(), v.finite()),
    endMs: v.pipe(v.number(), v.finite()),
    nodes: v.pipe(v.array(v.string()), v.minLength(1)),
    users: v.array(v.string()),
    reason: v.string(),
    createdBy: v.string(),
    // Absent in entries written before it was kept.
    createdMs: v.optional(v.pipe(v.number(), v.finite()), 0),
  }),
  v.check((r) => r.endMs > r.startMs),
);

/** The reservations stored under RESERVATIONS_SETTING; entries that do not read back are logged and left out. */
export function readReservations(stored: JsonValue | undefined, log: (line: string) => void): Reservation[] {
  if (stored === undefined) return [];
  if (!Array.isArray(stored)) {
    log(`ignored the stored reservations: not a list (${JSON.stringify(stored).slice(0, 80)})`);
    return [];
  }
  const kept: Reservation[] = [];
  for (const item of stored) {
    const read = v.safeParse(StoredReservationSchema, item);
    if (read.success) kept.push(read.output);
    else log(`ignored a stored reservation that does not read back: ${JSON.stringify(item).slice(0, 120)}`);
  }
  return kept;
}

export const toStored = (reservations: readonly Reservation[]): JsonValue =>
  reservations.map((r) => ({ ...r, nodes: [...r.nodes], users: [...r.users] }));
