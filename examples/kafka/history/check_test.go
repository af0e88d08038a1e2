package history

import "testing"

// Each check of Check, shown to fail on a history that breaks it, and to
// pass on its sound twin.

func ack(v string, p int32, o int64) Send {
	return Send{Value: v, Partition: p, Offset: o, Status: OK}
}

func polled(session int, p int32, o int64, v string) Poll {
	return Poll{Session: session, Partition: p, Offset: o, Value: v}
}

func TestCheckSound(t *testing.T) {
	h := &History{Sends: []Send{ack("a", 0, 0), ack("b", 0, 1), {Value: "c", Status: Unknown, Offset: -1}},
		Polls: []Poll{polled(1, 0, 0, "a"), polled(1, 0, 1, "b"), polled(1, 0, 2, "c"), polled(2, 0, 1, "b")}}
	if r := Check(h); !r.OK() {
		t.Fatal(r)
	}
}

func TestCheckFindsEachViolation(t *testing.T) {
	for name, c := range map[string]struct {
		h    History
		what func(*Report) []string
	}{
		"lost": {History{Sends: []Send{ack("a", 0, 0), ack("b", 0, 1)}, Polls: []Poll{polled(1, 0, 1, "b")}},
			func(r *Report) []string { return r.Lost }},
		"acknowledged elsewhere": {History{Sends: []Send{ack("a", 0, 0)}, Polls: []Poll{polled(1, 0, 0, "b")}},
			func(r *Report) []string { return r.Disagree }},
		"polls disagree": {History{Sends: []Send{ack("a", 0, 0)}, Polls: []Poll{polled(1, 0, 0, "a"), polled(2, 0, 0, "x")}},
			func(r *Report) []string { return r.Disagree }},
		"two offsets": {History{Sends: []Send{ack("a", 0, 0)}, Polls: []Poll{polled(1, 0, 0, "a"), polled(1, 0, 1, "a")}},
			func(r *Report) []string { return r.Duplicated }},
		"never sent": {History{Polls: []Poll{polled(1, 0, 0, "z")}},
			func(r *Report) []string { return r.Unexpected }},
		"skip": {History{Polls: []Poll{polled(1, 0, 0, "a"), polled(1, 0, 2, "c")}, Sends: []Send{ack("a", 0, 0), ack("c", 0, 2)}},
			func(r *Report) []string { return r.Skips }},
		"back": {History{Polls: []Poll{polled(1, 0, 1, "b"), polled(1, 0, 0, "a")}, Sends: []Send{ack("a", 0, 0), ack("b", 0, 1)}},
			func(r *Report) []string { return r.Backs }},
	} {
		if r := Check(&c.h); len(c.what(r)) != 1 {
			t.Errorf("%s: %v", name, r)
		}
	}
}

// A group member's polls are checked for order only within one assignment.
func TestCheckOrderWithinAnAssignment(t *testing.T) {
	member := func(epoch int, o int64, v string) Poll {
		return Poll{Session: 1, Group: true, Epoch: epoch, Partition: 0, Offset: o, Value: v}
	}
	h := &History{Sends: []Send{ack("a", 0, 0), ack("b", 0, 1), ack("c", 0, 2)},
		Polls: []Poll{member(1, 2, "c"), member(2, 0, "a"), member(2, 1, "b"), member(-1, 0, "a")}}
	if r := Check(h); !r.OK() {
		t.Fatal(r)
	}
}
