/** Moved to src/time/partial-days.ts (the dashboard's calendar uses it too: imports point down). */
export { partialDays, type PartialDay } from '../time/partial-days.js';
