package pipebench

import "strings"

// MeaningLedger is what the run's ledger says, in its items.
const MeaningLedger = "the ledger balances in items: sent = not accepted + delivered (or taken effect) + unread at the source + pending at end + lost, with duplicates shown apart; missing (accepted, not delivered when the drain ended) is the sink's count, unread and pending are read from the pipeline's own state after the drain (a collector's counters in items, a log agent's files, the node that leads a stream's consumer, a topic's log-end offsets, a store's documents), lost is what is missing and no longer held; a term that cannot be read is unknown, and the items it leaves open are unaccounted for, with why"

// WorkLeft is what a run ended with still to do, by its ledger (the
// total's pending_at_end, unread_at_source and unaccounted): how many
// items, and where they are in words ("7,500 pending at end (store
// (stored, not yet cordoned))"); 0 and "" when the run ended with nothing
// left, or has no ledger. A case that ends with work left is not stable.
func WorkLeft(r *Result) (items float64, where string) {
	if r == nil || r.Total == nil {
		return 0, ""
	}
	t := r.Total
	var parts []string
	if v, _ := t.Get("pending_at_end"); v > 0 {
		items += v
		s := FormatCount(v) + " pending at end"
		if w := t.All("held_at_end_where"); len(w) > 0 {
			s += " (" + w[0].Labels["where"] + ")"
		}
		parts = append(parts, s)
	}
	if v, _ := t.Get("unread_at_source"); v > 0 {
		items += v
		s := FormatCount(v) + " unread at the source"
		if w := t.All("unread_at_end_where"); len(w) > 0 {
			s += " (" + w[0].Labels["where"] + ")"
		}
		parts = append(parts, s)
	}
	if v, _ := t.Get("unaccounted"); v > 0 {
		items += v
		parts = append(parts, FormatCount(v)+" unaccounted for")
	}
	return items, strings.Join(parts, ", ")
}
