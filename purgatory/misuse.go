package purgatory

import (
	"fmt"
	"reflect"
	"unsafe"
)

// The misuses of an operation that panic, with messages that say what to do.

// opOf returns op's Op, panicking with a message that says what to do if op is
// nil, a nil pointer, or embeds a nil *Op. It looks for the nil pointer in the
// interface's data word rather than recover from the method's dereference of
// it: a deferred recover cost every add and ForceComplete (the in-process
// harness both ways round: 0.97x the time of W8's reused loop without it).
// An operation that reaches its Op through a nil pointer further in (a
// non-nil *T whose embedded *U, which embeds Op, is nil) panics with the
// runtime's nil dereference instead, before anything changes
// (TestNilOpFurtherIn).
func opOf(op Operation, caller string) *Op {
	if op == nil {
		panic("purgatory: " + caller + " called with a nil Operation")
	}
	if dataWord(op) == nil {
		panic(nilOp(caller))
	}
	o := op.mustEmbedPurgatoryOp() // nil if op embeds a nil *Op
	if o == nil {
		panic(nilOp(caller))
	}
	return o
}

// dataWord returns the second word of an interface value, which for a pointer
// it holds is that pointer (and for a struct of one pointer, that pointer):
// nil for a typed nil.
func dataWord(op Operation) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&op))[1]
}

func nilOp(caller string) string {
	return "purgatory: " + caller + " called with a nil pointer as its Operation, or one that embeds a nil *purgatory.Op; embed purgatory.Op by value in a non-nil operation"
}

// mustHaveTimeout panics if the operation has no way to end by itself.
func (o *Op) mustHaveTimeout(impl Operation) {
	if o.Timeout != 0 {
		return
	}
	if o.Context != nil {
		if _, ok := o.Context.Deadline(); ok {
			return
		}
	}
	panic("purgatory: Op.Timeout is zero; set a positive Timeout, purgatory.NoTimeout to wait without one, or a Context with a deadline" + hidden(impl))
}

// hidden names the fields of impl's own that hide Op's Timeout and Context, so
// that someone who set their own field learns why the purgatory saw none.
// It runs only on the way to a panic.
func hidden(impl Operation) (msg string) {
	t := reflect.TypeOf(impl)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return ""
	}
	st := t.Elem()
	for _, name := range []string{"Timeout", "Context"} {
		if f, ok := st.FieldByName(name); ok && len(f.Index) == 1 && !f.Anonymous {
			msg += fmt.Sprintf("; %v has a field %s of its own, which hides the embedded purgatory.Op's: set op.Op.%s (or rename yours)", t, name, name)
		}
	}
	return msg
}
