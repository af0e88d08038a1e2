package purgatory

import (
	"fmt"
	"reflect"
)

// The misuses of an operation that panic, with messages that say what to do.

// opOf returns op's Op, panicking with a message that says what to do if op is
// nil, a typed nil pointer, or embeds a nil *Op.
func opOf(op Operation, caller string) (o *Op) {
	if op == nil {
		panic("purgatory: " + caller + " called with a nil Operation")
	}
	defer func() {
		if o == nil {
			recover() // the nil dereference inside op's promoted method
			panic("purgatory: " + caller + " called with a nil pointer as its Operation, or one that embeds a nil *purgatory.Op; embed purgatory.Op by value in a non-nil operation")
		}
	}()
	return op.mustEmbedPurgatoryOp()
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
